#!/bin/bash
# Prints the folder that holds cuDNN 9 (libcudnn.so.9) on a GPU machine whose cuDNN came with
# PyTorch's Python packages (nvidia/cudnn/lib, or nvidia/cu13/lib in CUDA 13 wheels), else
# /usr/local/cuda's, else nothing. For driver.cuda.cudnn (SESSION_DRIVER_CUDA_CUDNN) and
# LD_LIBRARY_PATH (cuDNN loads its sub-libraries, libcudnn_ops and friends, from beside it).
#   tests/cuda/find-cudnn.sh [PYTHON]
python=${1:-${PYTHON:-python3}}
"$python" - 2>/dev/null <<'PY' && exit 0
import glob, os, site, sys
roots = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
for root in roots:
    if not root or not os.path.isdir(root):
        continue
    hits = sorted(glob.glob(os.path.join(root, "nvidia", "**", "libcudnn.so.9*"), recursive=True))
    if hits:
        print(os.path.dirname(hits[0]))
        sys.exit(0)
sys.exit(1)
PY
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
  if ls "$d"/libcudnn.so.9* >/dev/null 2>&1; then echo "$d"; exit 0; fi
done
exit 1
