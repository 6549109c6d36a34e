/*
 * A minimal xclbin writer for the FPGA driver's tests (see xclbin_writer.h). The file is an
 * axlf header with four section headers, then the sections, each at an 8-byte boundary:
 *
 *   MEM_TOPOLOGY       two DDR4 banks, "bank0" and "bank1", 1 GiB each
 *   IP_LAYOUT          one IP_KERNEL per kernel, named "<kernel>:<kernel>_1", 64 KiB apart
 *   CONNECTIVITY       each buffer argument of each kernel to its kernel's bank
 *   EMBEDDED_METADATA  the XML XRT reads kernel arguments from (project.platform.device.core)
 */
#include "xclbin_writer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xclbin.h>

#define CU_BASE UINT64_C(0x1800000)
#define CU_STRIDE UINT64_C(0x10000)
#define BANK_KB (UINT64_C(1) << 20) /* 1 GiB in KiB, the unit of mem_data.m_size */

static size_t align8(size_t n) {
    return (n + 7) & ~(size_t)7;
}

/* Appends printf output to a growing string; returns 0 on success. */
__attribute__((format(printf, 4, 5))) static int append(char **s, size_t *len, size_t *cap,
                                                        const char *format, ...) {
    va_list ap;
    int n;

    for (;;) {
        va_start(ap, format);
        n = vsnprintf(*s + *len, *cap - *len, format, ap);
        va_end(ap);
        if (n < 0)
            return -1;
        if ((size_t)n < *cap - *len)
            break;
        char *grown = realloc(*s, *cap * 2 + (size_t)n);
        if (!grown)
            return -1;
        *s = grown;
        *cap = *cap * 2 + (size_t)n;
    }
    *len += (size_t)n;
    return 0;
}

/* The EMBEDDED_METADATA XML: ports, arguments (register offsets from 0x10, 8 bytes apart for
 * buffers) and one instance per kernel. */
static char *metadata_xml(const xclbin_kernel_t *kernels, size_t n_kernels, size_t *out_len) {
    size_t len = 0, cap = 4096;
    char *s = malloc(cap);
    int bad = !s;

    if (s)
        s[0] = '\0';
    bad = bad || append(&s, &len, &cap,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<project name=\"ses_test\">\n <platform vendor=\"xilinx\" "
                        "boardid=\"noop\" name=\"ses_test\" featureRomTime=\"0\">\n"
                        "  <version major=\"1\" minor=\"0\"/>\n"
                        "  <device name=\"fpga0\" fpgaDevice=\"noop\">\n"
                        "   <core name=\"OCL_REGION_0\" target=\"hw\" "
                        "type=\"clc_region\" clockFreq=\"300MHz\" numComputeUnits="
                        "\"%zu\">\n",
                        n_kernels);
    for (size_t k = 0; k < n_kernels && !bad; k++) {
        const xclbin_kernel_t *kn = &kernels[k];
        uint32_t offset = 0x10;
        bad = append(&s, &len, &cap,
                     "    <kernel name=\"%s\" language=\"c\" vlnv=\"xilinx.com:hls:%s:1.0\" "
                     "preferredWorkGroupSizeMultiple=\"0\" workGroupSize=\"1\" "
                     "interrupt=\"true\" hwControlProtocol=\"ap_ctrl_hs\">\n"
                     "     <port name=\"M_AXI_GMEM\" mode=\"master\" range=\"0xFFFFFFFF\" "
                     "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>\n"
                     "     <port name=\"S_AXI_CONTROL\" mode=\"slave\" range=\"0x1000\" "
                     "dataWidth=\"32\" portType=\"addressable\" base=\"0x0\"/>\n",
                     kn->name, kn->name);
        for (uint32_t a = 0; a < kn->n_args && !bad; a++) {
            const xclbin_arg_t *arg = &kn->args[a];
            const uint32_t size = arg->is_buffer ? 8 : arg->host_size;
            bad =
                append(&s, &len, &cap,
                       "     <arg name=\"%s\" addressQualifier=\"%d\" id=\"%u\" port=\"%s\" "
                       "size=\"0x%x\" offset=\"0x%x\" hostOffset=\"0x0\" hostSize=\"0x%x\" "
                       "type=\"%s\"/>\n",
                       arg->name, arg->is_buffer ? 1 : 0, a,
                       arg->is_buffer ? "M_AXI_GMEM" : "S_AXI_CONTROL", size, offset, size,
                       arg->is_buffer ? "float*" : (size == 8 ? "unsigned long" : "unsigned int"));
            offset += size < 8 ? 8 : size;
        }
        bad = bad || append(&s, &len, &cap,
                            "     <instance name=\"%s_1\">\n"
                            "      <addrRemap base=\"0x%llx\" port=\"S_AXI_CONTROL\"/>\n"
                            "     </instance>\n"
                            "    </kernel>\n",
                            kn->name, (unsigned long long)(CU_BASE + k * CU_STRIDE));
    }
    bad = bad || append(&s, &len, &cap, "   </core>\n  </device>\n </platform>\n</project>\n");
    if (bad) {
        free(s);
        return NULL;
    }
    *out_len = len + 1; /* XRT's parser takes the NUL too; harmless */
    return s;
}

xclbin_kernel_t *xclbin_convention(xclbin_kernel_t *k, const char *name, const char *shape) {
    static const char *const matmul[] = {"A", "B", "C", "M", "K", "N"};
    static const char *const binary[] = {"A", "B", "C", "n"};
    static const char *const unary[] = {"X", "Y", "n"};
    const char *const *names = unary;
    uint32_t n = 3, n_buffers = 2;

    if (!strcmp(shape, "matmul")) {
        names = matmul;
        n = 6;
        n_buffers = 3;
    } else if (!strcmp(shape, "binary")) {
        names = binary;
        n = 4;
        n_buffers = 3;
    }
    memset(k, 0, sizeof *k);
    k->name = name;
    k->n_args = n;
    for (uint32_t i = 0; i < n; i++) {
        k->args[i].name = names[i];
        k->args[i].is_buffer = i < n_buffers;
        k->args[i].host_size = 4;
    }
    return k;
}

int xclbin_write(const char *path, const xclbin_kernel_t *kernels, size_t n_kernels) {
    enum { N_SECTIONS = 4 };
    size_t n_connections = 0, xml_len = 0;
    unsigned char *file = NULL;
    char *xml = NULL;
    FILE *f = NULL;
    int ok = 0;

    if (!path || (!kernels && n_kernels) || n_kernels > 64) {
        errno = EINVAL;
        return -1;
    }
    for (size_t k = 0; k < n_kernels; k++) {
        if (kernels[k].n_args > XCLBIN_WRITER_MAX_ARGS || strlen(kernels[k].name) > 40 ||
            kernels[k].bank > 1) {
            errno = EINVAL;
            return -1;
        }
        for (uint32_t a = 0; a < kernels[k].n_args; a++)
            n_connections += kernels[k].args[a].is_buffer ? 1 : 0;
    }
    xml = metadata_xml(kernels, n_kernels, &xml_len);
    if (!xml) {
        errno = ENOMEM;
        return -1;
    }

    const size_t mem_size = offsetof(struct mem_topology, m_mem_data) + 2 * sizeof(struct mem_data);
    const size_t ip_size = offsetof(struct ip_layout, m_ip_data) +
                           (n_kernels ? n_kernels : 1) * sizeof(struct ip_data);
    const size_t conn_size = offsetof(struct connectivity, m_connection) +
                             (n_connections ? n_connections : 1) * sizeof(struct connection);
    const size_t sizes[N_SECTIONS] = {mem_size, ip_size, conn_size, xml_len};
    const uint32_t kinds[N_SECTIONS] = {MEM_TOPOLOGY, IP_LAYOUT, CONNECTIVITY, EMBEDDED_METADATA};
    const char *const names[N_SECTIONS] = {"mem_topology", "ip_layout", "connectivity", "metadata"};
    size_t offsets[N_SECTIONS];
    size_t total =
        align8(sizeof(struct axlf) + (N_SECTIONS - 1) * sizeof(struct axlf_section_header));
    for (int s = 0; s < N_SECTIONS; s++) {
        offsets[s] = total;
        total = align8(total + sizes[s]);
    }
    file = calloc(1, total);
    if (!file) {
        errno = ENOMEM;
        goto done;
    }

    /* The header. The UUID is fixed per kernel list, so that one list always gives one id. */
    struct axlf *top = (struct axlf *)(void *)file;
    memcpy(top->m_magic, "xclbin2", 8);
    top->m_signature_length = -1;
    memset(top->reserved, 0xFF, sizeof top->reserved);
    memset(top->m_keyBlock, 0xFF, sizeof top->m_keyBlock);
    top->m_uniqueId = 0x5e55;
    top->m_header.m_length = total;
    top->m_header.m_versionMajor = 2;
    top->m_header.m_versionMinor = 13;
    top->m_header.m_mode = XCLBIN_FLAT;
    snprintf((char *)top->m_header.m_platformVBNV, sizeof top->m_header.m_platformVBNV,
             "xilinx:ses_test:noop:1.0");
    for (size_t i = 0; i < sizeof top->m_header.uuid; i++)
        top->m_header.uuid[i] = (unsigned char)(0xA5 ^ (i * 29));
    for (size_t k = 0; k < n_kernels; k++)
        for (const char *p = kernels[k].name; *p; p++)
            top->m_header.uuid[(k + (size_t)(p - kernels[k].name)) % 16] ^= (unsigned char)*p;
    top->m_header.m_numSections = N_SECTIONS;
    for (int s = 0; s < N_SECTIONS; s++) {
        struct axlf_section_header *h = &top->m_sections[s];
        h->m_sectionKind = kinds[s];
        snprintf(h->m_sectionName, sizeof h->m_sectionName, "%s", names[s]);
        h->m_sectionOffset = offsets[s];
        h->m_sectionSize = sizes[s];
    }

    /* MEM_TOPOLOGY: two used DDR4 banks. */
    struct mem_topology *mem = (struct mem_topology *)(void *)(file + offsets[0]);
    mem->m_count = 2;
    for (int b = 0; b < 2; b++) {
        struct mem_data *md = &mem->m_mem_data[b];
        md->m_type = MEM_DDR4;
        md->m_used = 1;
        md->m_size = BANK_KB;
        md->m_base_address = UINT64_C(0x4000000000) + (uint64_t)b * BANK_KB * 1024;
        snprintf((char *)md->m_tag, sizeof md->m_tag, "bank%d", b);
    }

    /* IP_LAYOUT: one compute unit per kernel, sorted by base address, ap_ctrl_hs. */
    struct ip_layout *ips = (struct ip_layout *)(void *)(file + offsets[1]);
    ips->m_count = (int32_t)n_kernels;
    for (size_t k = 0; k < n_kernels; k++) {
        struct ip_data *ip = &ips->m_ip_data[k];
        ip->m_type = IP_KERNEL;
        ip->properties = (uint32_t)AP_CTRL_HS << IP_CONTROL_SHIFT;
        ip->m_base_address = CU_BASE + k * CU_STRIDE;
        snprintf((char *)ip->m_name, sizeof ip->m_name, "%s:%s_1", kernels[k].name,
                 kernels[k].name);
    }

    /* CONNECTIVITY: each buffer argument to its kernel's bank. */
    struct connectivity *conn = (struct connectivity *)(void *)(file + offsets[2]);
    conn->m_count = (int32_t)n_connections;
    size_t c = 0;
    for (size_t k = 0; k < n_kernels; k++) {
        for (uint32_t a = 0; a < kernels[k].n_args; a++) {
            if (!kernels[k].args[a].is_buffer)
                continue;
            conn->m_connection[c].arg_index = (int32_t)a;
            conn->m_connection[c].m_ip_layout_index = (int32_t)k;
            conn->m_connection[c].mem_data_index = (int32_t)kernels[k].bank;
            c++;
        }
    }

    memcpy(file + offsets[3], xml, xml_len);

    f = fopen(path, "wb");
    if (!f)
        goto done;
    ok = fwrite(file, total, 1, f) == 1;
    ok = fclose(f) == 0 && ok;

done:
    free(file);
    free(xml);
    return ok ? 0 : -1;
}
