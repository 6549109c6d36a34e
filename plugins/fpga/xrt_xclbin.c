/*
 * Reading an xclbin file: which kernels it holds and what their arguments are.
 *
 * XRT's C API loads an xclbin and opens a kernel by name, but does not list the kernels or
 * their arguments, so the driver reads them from the file itself, as xclbin.h lays it out: an
 * axlf header, section headers, then sections. Two sections matter:
 *   - IP_LAYOUT: one ip_data per compute unit, IP_KERNEL ones named "<kernel>:<instance>";
 *   - EMBEDDED_METADATA: XML with, per kernel, <arg id=".." addressQualifier=".."
 *     hostSize=".."/> elements under project/platform/device/core/kernel[@name].
 * Only those two sections are read (never the bitstream), with every offset and count checked
 * against the file's and the section's size.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "xrt_internal.h"

#include <xclbin.h>

/* Sections larger than these are refused: real ones are kilobytes. */
#define XRT_MAX_IP_LAYOUT (UINT64_C(16) << 20)
#define XRT_MAX_METADATA (UINT64_C(64) << 20)

/* Reads @p size bytes at @p offset of @p f into a new buffer (NUL-terminated); NULL on error. */
static char *read_at(FILE *f, uint64_t offset, uint64_t size) {
    char *data;

    if (size > SIZE_MAX - 1 || offset > (uint64_t)INT64_MAX)
        return NULL;
    data = malloc((size_t)size + 1);
    if (!data)
        return NULL;
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || (size && fread(data, (size_t)size, 1, f) != 1)) {
        free(data);
        return NULL;
    }
    data[size] = '\0';
    return data;
}

/* The value of attribute @p name in the tag [tag, end) into @p out; 0 when absent. */
static int xml_attr(const char *tag, const char *end, const char *name, char *out,
                    size_t out_size) {
    const size_t n = strlen(name);

    for (const char *p = tag; p + n + 2 < end; p++) {
        if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r') ||
            strncmp(p, name, n) != 0 || p[n] != '=' || (p[n + 1] != '"' && p[n + 1] != '\''))
            continue;
        const char quote = p[n + 1];
        const char *v = p + n + 2, *close = v;
        while (close < end && *close != quote)
            close++;
        if (close >= end || (size_t)(close - v) >= out_size)
            return 0;
        memcpy(out, v, (size_t)(close - v));
        out[close - v] = '\0';
        return 1;
    }
    return 0;
}

/* A number attribute ("0x10", "4"); @p fallback when absent or not a number. */
static uint64_t xml_number(const char *tag, const char *end, const char *name, uint64_t fallback) {
    char value[32], *stop = NULL;

    if (!xml_attr(tag, end, name, value, sizeof value) || !value[0])
        return fallback;
    errno = 0;
    unsigned long long v = strtoull(value, &stop, 0);
    return (errno || *stop) ? fallback : (uint64_t)v;
}

/* Fills @p k's arguments from the <kernel name="k->name"> element of @p xml, if there is one. */
static void read_kernel_args(const char *xml, xrt_xkernel_t *k) {
    const char *p = xml;

    while ((p = strstr(p, "<kernel")) != NULL) {
        const char *tag_end = strchr(p, '>');
        char name[XRT_NAME_MAX + 2];
        if (!tag_end)
            return;
        if (!(p[7] == ' ' || p[7] == '\t' || p[7] == '\n' || p[7] == '\r') ||
            !xml_attr(p + 7, tag_end, "name", name, sizeof name) || strcmp(name, k->name) != 0) {
            p = tag_end;
            continue;
        }
        const char *body_end = strstr(tag_end, "</kernel>");
        if (!body_end)
            body_end = tag_end + strlen(tag_end);
        k->args_found = 1;
        for (const char *a = tag_end; (a = strstr(a, "<arg")) != NULL && a < body_end;) {
            const char *a_end = strchr(a, '>');
            if (!a_end || a_end > body_end)
                break;
            if (a[4] == ' ' || a[4] == '\t' || a[4] == '\n' || a[4] == '\r') {
                const uint64_t id = xml_number(a + 4, a_end, "id", UINT64_MAX);
                const uint64_t qualifier = xml_number(a + 4, a_end, "addressQualifier", 99);
                uint64_t size = xml_number(a + 4, a_end, "hostSize", 0);
                if (size == 0)
                    size = xml_number(a + 4, a_end, "size", 0);
                /* Indices past what a convention uses are recorded as "one too many". */
                const uint32_t index = id > XRT_MAX_ARGS ? XRT_MAX_ARGS : (uint32_t)id;
                if (id != UINT64_MAX) {
                    k->args[index].qualifier = qualifier > 99 ? 99 : (uint32_t)qualifier;
                    k->args[index].host_size = size > 64 ? 64 : (uint32_t)(size ? size : 1);
                    if (index + 1 > k->n_args)
                        k->n_args = index + 1;
                }
            }
            a = a_end;
        }
        return;
    }
}

/*
 * Reads section @p h, an int32 count followed by an array (at @p array_offset) of @p elem-byte
 * entries, into *@p out_data (owned by the caller); 0 when it cannot be read or the count does
 * not fit in the section.
 */
static int read_counted(FILE *f, const struct axlf_section_header *h, size_t array_offset,
                        size_t elem, int32_t *out_count, char **out_data) {
    int32_t count;

    *out_data = NULL;
    if (h->m_sectionSize > XRT_MAX_IP_LAYOUT || h->m_sectionSize < sizeof count)
        return 0;
    char *data = read_at(f, h->m_sectionOffset, h->m_sectionSize);
    if (!data)
        return 0;
    memcpy(&count, data, sizeof count);
    if (count < 0 || (count > 0 && array_offset + (uint64_t)count * elem > h->m_sectionSize)) {
        free(data);
        return 0;
    }
    *out_count = count;
    *out_data = data;
    return 1;
}

/*
 * XRT trusts the counts and indices of the sections it indexes and crashes on a damaged file,
 * so they are checked before the file is handed to it: every MEM_TOPOLOGY, IP_LAYOUT and
 * CONNECTIVITY (and their group variants) must fit in its section, and every connection must
 * name an existing compute unit and memory bank.
 */
static int check_sections(FILE *f, const char *path, const struct axlf_section_header *sections,
                          uint32_t n_sections, char *why, size_t why_size) {
    int32_t n_mem = 0, n_ip = 0;
    char *data = NULL;

    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < n_sections; i++) {
            const struct axlf_section_header *h = &sections[i];
            const uint32_t kind = h->m_sectionKind;
            int32_t count = 0;
            int ok = 1;

            if (pass == 0 && (kind == MEM_TOPOLOGY || kind == ASK_GROUP_TOPOLOGY)) {
                ok = read_counted(f, h, offsetof(struct mem_topology, m_mem_data),
                                  sizeof(struct mem_data), &count, &data);
                if (ok && count > n_mem)
                    n_mem = count;
            } else if (pass == 0 && kind == IP_LAYOUT) {
                ok = read_counted(f, h, offsetof(struct ip_layout, m_ip_data),
                                  sizeof(struct ip_data), &count, &data);
                if (ok && count > n_ip)
                    n_ip = count;
            } else if (pass == 1 && (kind == CONNECTIVITY || kind == ASK_GROUP_CONNECTIVITY)) {
                ok = read_counted(f, h, offsetof(struct connectivity, m_connection),
                                  sizeof(struct connection), &count, &data);
                for (int32_t c = 0; ok && c < count; c++) {
                    struct connection conn;
                    memcpy(&conn,
                           data + offsetof(struct connectivity, m_connection) +
                               (size_t)c * sizeof conn,
                           sizeof conn);
                    if (conn.arg_index < 0 || conn.m_ip_layout_index < 0 ||
                        conn.m_ip_layout_index >= n_ip || conn.mem_data_index < 0 ||
                        conn.mem_data_index >= n_mem) {
                        snprintf(why, why_size,
                                 "%s: connection %" PRId32 " names compute unit %" PRId32
                                 " and memory bank %" PRId32 "; the file has %" PRId32
                                 " and %" PRId32,
                                 path, c, conn.m_ip_layout_index, conn.mem_data_index, n_ip, n_mem);
                        free(data);
                        return 0;
                    }
                }
            } else {
                continue;
            }
            free(data);
            data = NULL;
            if (!ok) {
                snprintf(why, why_size,
                         "%s: section %" PRIu32 " (kind %" PRIu32 ", %" PRIu64
                         " bytes) is damaged: its entry count does not fit in it",
                         path, i, kind, (uint64_t)h->m_sectionSize);
                return 0;
            }
        }
    }
    return 1;
}

int32_t xrt__read_xclbin(const char *path, xrt_xkernel_t **out_kernels, uint32_t *out_count,
                         char *why, size_t why_size) {
    struct axlf top;
    struct axlf_section_header *sections = NULL;
    char *ip_data = NULL, *xml = NULL;
    xrt_xkernel_t *kernels = NULL;
    uint32_t n_kernels = 0;
    struct stat st;
    int32_t code = SES_DRV_INVALID_ARGUMENT;
    FILE *f;

    *out_kernels = NULL;
    *out_count = 0;
    f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_size, "cannot open %s: %s", path, strerror(errno));
        return errno == ENOENT ? SES_DRV_NOT_FOUND : SES_DRV_INVALID_ARGUMENT;
    }
    const size_t fixed = offsetof(struct axlf, m_sections);
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(why, why_size, "%s is not a regular file", path);
        goto done;
    }
    const uint64_t file_size = (uint64_t)st.st_size;
    if (file_size < fixed || fread(&top, fixed, 1, f) != 1 ||
        memcmp(top.m_magic, "xclbin2", 8) != 0) {
        snprintf(why, why_size, "%s is not an xclbin (no \"xclbin2\" header)", path);
        goto done;
    }
    const uint32_t n_sections = top.m_header.m_numSections;
    if (n_sections == 0 || n_sections > XCLBIN_MAX_NUM_SECTION ||
        fixed + (uint64_t)n_sections * sizeof *sections > file_size) {
        snprintf(why, why_size,
                 "%s: %" PRIu32 " section headers do not fit in its %" PRIu64 " bytes", path,
                 n_sections, file_size);
        goto done;
    }
    sections = (struct axlf_section_header *)(void *)read_at(
        f, fixed, (uint64_t)n_sections * sizeof *sections);
    if (!sections) {
        snprintf(why, why_size, "%s: cannot read its section headers", path);
        goto done;
    }
    const struct axlf_section_header *ip_hdr = NULL, *xml_hdr = NULL;
    for (uint32_t i = 0; i < n_sections; i++) {
        const struct axlf_section_header *h = &sections[i];
        if (h->m_sectionOffset > file_size || h->m_sectionSize > file_size - h->m_sectionOffset) {
            snprintf(why, why_size,
                     "%s: section %" PRIu32 " (kind %" PRIu32 ") runs past the end of the file",
                     path, i, h->m_sectionKind);
            goto done;
        }
        if (h->m_sectionKind == IP_LAYOUT && !ip_hdr)
            ip_hdr = h;
        else if (h->m_sectionKind == EMBEDDED_METADATA && !xml_hdr)
            xml_hdr = h;
    }
    if (top.m_header.m_length > file_size) {
        snprintf(why, why_size, "%s: its header says %" PRIu64 " bytes, the file has %" PRIu64,
                 path, (uint64_t)top.m_header.m_length, file_size);
        goto done;
    }
    if (!check_sections(f, path, sections, n_sections, why, why_size))
        goto done;
    code = SES_DRV_OK;
    if (!ip_hdr)
        goto done; /* no compute units: no kernels */
    if (ip_hdr->m_sectionSize > XRT_MAX_IP_LAYOUT ||
        ip_hdr->m_sectionSize < offsetof(struct ip_layout, m_ip_data) ||
        !(ip_data = read_at(f, ip_hdr->m_sectionOffset, ip_hdr->m_sectionSize))) {
        snprintf(why, why_size, "%s: its IP_LAYOUT section (%" PRIu64 " bytes) cannot be read",
                 path, (uint64_t)ip_hdr->m_sectionSize);
        code = SES_DRV_INVALID_ARGUMENT;
        goto done;
    }
    const struct ip_layout *ips = (const struct ip_layout *)(const void *)ip_data;
    if (ips->m_count < 0 ||
        offsetof(struct ip_layout, m_ip_data) + (uint64_t)ips->m_count * sizeof(struct ip_data) >
            ip_hdr->m_sectionSize) {
        snprintf(why, why_size, "%s: IP_LAYOUT claims %" PRId32 " entries in %" PRIu64 " bytes",
                 path, ips->m_count, (uint64_t)ip_hdr->m_sectionSize);
        code = SES_DRV_INVALID_ARGUMENT;
        goto done;
    }
    kernels = calloc(ips->m_count ? (size_t)ips->m_count : 1, sizeof *kernels);
    if (!kernels) {
        snprintf(why, why_size, "out of host memory");
        code = SES_DRV_OUT_OF_MEMORY;
        goto done;
    }
    for (int32_t i = 0; i < ips->m_count; i++) {
        const struct ip_data *ip = &ips->m_ip_data[i];
        char name[sizeof ip->m_name + 1];
        if (ip->m_type != IP_KERNEL)
            continue;
        memcpy(name, ip->m_name, sizeof ip->m_name);
        name[sizeof ip->m_name] = '\0';
        char *colon = strchr(name, ':');
        if (colon)
            *colon = '\0';
        if (!name[0] || strlen(name) > XRT_NAME_MAX)
            continue;
        uint32_t j = 0;
        while (j < n_kernels && strcmp(kernels[j].name, name) != 0)
            j++;
        if (j == n_kernels) /* a kernel with several compute units is listed once */
            snprintf(kernels[n_kernels++].name, sizeof kernels[0].name, "%s", name);
    }
    if (xml_hdr && xml_hdr->m_sectionSize <= XRT_MAX_METADATA &&
        (xml = read_at(f, xml_hdr->m_sectionOffset, xml_hdr->m_sectionSize)) != NULL) {
        for (uint32_t k = 0; k < n_kernels; k++)
            read_kernel_args(xml, &kernels[k]);
    }

done:
    fclose(f);
    free(sections);
    free(ip_data);
    free(xml);
    if (code != SES_DRV_OK) {
        free(kernels);
        return code;
    }
    *out_kernels = kernels;
    *out_count = n_kernels;
    return SES_DRV_OK;
}
