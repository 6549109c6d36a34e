#!/usr/bin/env python3
"""PyTorch's side of bench/gpu/run.sh: one training step of the seeds' network on the GPU.

784-256-10, sigmoid, softmax cross-entropy, SGD lr 0.1, one random batch, as
bench/torch_train_step.py does on the CPU, with the model and batch on cuda:0. The loss is
read back each step (loss.item()), as a training loop that prints it does.

    python3 bench/gpu/torch_train_step_gpu.py --batch 64

Prints:
    bench: torch_gpu_train_step_b<B>: <steps/s> steps/s
    bench: torch_gpu_train_step_b<B>_us: <us> us
Exits 3 when PyTorch or a CUDA device is missing.
"""
import argparse
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_train_step_gpu.py: PyTorch is not installed for %s" % sys.executable,
              file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_train_step_gpu.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False  # as the CUDA driver without allow_tf32
    dev = torch.device("cuda:0")
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.Sigmoid(), torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.rand(args.batch, 784, device=dev)
    y = torch.randint(0, 10, (args.batch,), device=dev)

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(200):
        step()
    times = []
    for _ in range(args.reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / args.steps)
    t = statistics.median(times)
    print("torch %s on %s, batch %d: %.1f us per step"
          % (torch.__version__, torch.cuda.get_device_name(0), args.batch, t * 1e6))
    print("bench: torch_gpu_train_step_b%d: %.1f steps/s" % (args.batch, 1.0 / t))
    print("bench: torch_gpu_train_step_b%d_us: %.1f us" % (args.batch, t * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
