#!/usr/bin/env python3
"""PyTorch's side of bench/gpu/run.sh: one training step of the seeds' network on the GPU.

784-256-10, sigmoid, softmax cross-entropy, SGD lr 0.1, one random batch, as
bench/torch_train_step.py does on the CPU, with the model on cuda:0. Each step copies the batch
in from (pageable) host memory, as session-train-bench's step does with its fed host tensors, and
reads the loss back (loss.item()), as a training loop that prints it does. fp32, TF32 off.

    python3 bench/gpu/torch_train_step_gpu.py --batch 64,512,4096
    python3 bench/gpu/torch_train_step_gpu.py --cpu-smoke          (cpu, few steps: a quick check)

Prints, per batch B:
    bench: torch_gpu_train_step_b<B>: <steps/s> steps/s          the batch copied in each step
    bench: torch_gpu_train_step_b<B>_us: <us> us
    bench: torch_gpu_train_step_b<B>_resident: <steps/s> steps/s the batch already on the device
                                                                  (left out with --no-resident)
On a CPU (--device cpu, --cpu-smoke) the names say torch_cpu_ instead of torch_gpu_.
Exits 3 when PyTorch or a CUDA device is missing.
"""
import argparse
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", default="64", help="one batch size or several: 64,512,4096")
    parser.add_argument("--steps", type=int, default=0,
                        help="steps per repetition (default 200 up to batch 64, else 100)")
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--no-resident", action="store_true",
                        help="skip the figure with the batch kept on the device")
    parser.add_argument("--cpu-smoke", action="store_true", help="--device cpu, 5 steps x 3 reps")
    args = parser.parse_args()
    warmup = 200
    if args.cpu_smoke:
        args.device, args.steps, args.reps, warmup = "cpu", 5, 3, 5
    batches = [int(b) for b in args.batch.split(",")]
    try:
        import torch
    except ImportError:
        print("torch_train_step_gpu.py: PyTorch is not installed for %s" % sys.executable,
              file=sys.stderr)
        return 3
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("torch_train_step_gpu.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 3
    torch.backends.cuda.matmul.allow_tf32 = False  # as the CUDA driver without allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")  # the same, by the 2.x spelling
    where = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    kind = "gpu" if dev.type == "cuda" else dev.type  # the name says where it ran

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    for batch in batches:
        steps = args.steps or (200 if batch <= 64 else 100)
        torch.manual_seed(1)
        model = torch.nn.Sequential(
            torch.nn.Linear(784, 256), torch.nn.Sigmoid(), torch.nn.Linear(256, 10)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        x_host = torch.rand(batch, 784)
        y_host = torch.randint(0, 10, (batch,))
        x_dev, y_dev = x_host.to(dev), y_host.to(dev)

        def step(copy):
            x, y = (x_host.to(dev), y_host.to(dev)) if copy else (x_dev, y_dev)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss.item()

        def measure(copy):
            for _ in range(warmup):
                step(copy)
            times = []
            for _ in range(args.reps):
                sync()
                t0 = time.perf_counter()
                for _ in range(steps):
                    step(copy)
                sync()
                times.append((time.perf_counter() - t0) / steps)
            return statistics.median(times), min(times), max(times)

        t, lo, hi = measure(True)
        print("torch %s on %s, batch %d, batch copied in each step: %.1f us (spread %.1f-%.1f), "
              "%d steps x %d reps" % (torch.__version__, where, batch, t * 1e6, lo * 1e6,
                                      hi * 1e6, steps, args.reps))
        print("bench: torch_%s_train_step_b%d: %.1f steps/s" % (kind, batch, 1.0 / t))
        print("bench: torch_%s_train_step_b%d_us: %.1f us" % (kind, batch, t * 1e6))
        if not args.no_resident:
            t, lo, hi = measure(False)
            print("torch %s on %s, batch %d, batch resident on the device: %.1f us "
                  "(spread %.1f-%.1f)" % (torch.__version__, where, batch, t * 1e6, lo * 1e6,
                                          hi * 1e6))
            print("bench: torch_%s_train_step_b%d_resident: %.1f steps/s"
                  % (kind, batch, 1.0 / t))
    return 0


if __name__ == "__main__":
    sys.exit(main())
