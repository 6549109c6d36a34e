#!/usr/bin/python3
"""PyTorch's side of bench/train_bench.sh: one training step of the seeds' network.

784-256-10, sigmoid, softmax cross-entropy, SGD lr 0.1, on one random batch, as
bench/train_bench.c does it. Run with Debian's python3-torch (/usr/bin/python3).

    /usr/bin/python3 bench/torch_train_step.py --batch 64 --threads 1

Prints the same kind of lines as session-train-bench:
    bench: torch_train_step_b<B>_t<T>: <steps/s> steps/s
    bench: torch_train_step_b<B>_t<T>_us: <us> us
"""
import argparse
import statistics
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="steps per repetition")
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args()
    if args.batch < 1 or args.threads < 1 or args.reps < 1 or args.steps < 0:
        parser.error("--batch, --threads and --reps must be at least 1")
    steps = args.steps or (200 if args.batch <= 64 else 60)

    try:
        import torch
    except ImportError:
        print("torch_train_step.py: PyTorch is not installed for %s; install it with "
              "'sudo apt-get install python3-torch'" % sys.executable, file=sys.stderr)
        return 3

    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.Sigmoid(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.rand(args.batch, 784)
    y = torch.randint(0, 10, (args.batch,))

    def step():
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()  # the loop reads the loss, as session-train-bench fetches it

    for _ in range(200):
        step()
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        times.append((time.perf_counter() - t0) / steps)
    t = statistics.median(times)
    tag = "b%d_t%d" % (args.batch, args.threads)
    print("torch %s, batch %d, threads %d: %.1f us (spread %.1f-%.1f), %d steps x %d reps"
          % (torch.__version__, args.batch, args.threads, t * 1e6, min(times) * 1e6,
             max(times) * 1e6, steps, args.reps))
    print("bench: torch_train_step_%s: %.1f steps/s" % (tag, 1.0 / t))
    print("bench: torch_train_step_%s_us: %.1f us" % (tag, t * 1e6))
    return 0


if __name__ == "__main__":
    sys.exit(main())
