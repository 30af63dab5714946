# PyTorch itself reads the allocator settings the library merged (issue #29):
# prints the backend PyTorch chose and the settings it was given, after
# allocating on the GPU (PyTorch parses the whole string then, and refuses an
# option it does not know, an empty one included).
import os

import torch

x = torch.ones(1024, device="cuda")
torch.cuda.synchronize()
print("backend", torch.cuda.get_allocator_backend())
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
print("conf length", len(conf), "ends", conf[-40:])
print("sum", float(x.sum()))
