"""Readers for the files training data comes in."""

import os

from . import _core

__all__ = ["read_idx", "load_fashion_mnist", "FASHION_MNIST_DIR"]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """Reads an idx file (MNIST's and Fashion-MNIST's format, gzip-compressed or not) into a
    NumPy array of its dtype and shape. Strict: a malformed file raises InvalidArgumentError
    naming the problem, a missing one NotFoundError."""
    return _core.read_idx(os.fspath(path))


def load_fashion_mnist(data_dir=FASHION_MNIST_DIR):
    """Fashion-MNIST from Debian's dataset-fashion-mnist: ``(train_images, train_labels,
    test_images, test_labels)``, images uint8 [n, 28, 28], labels uint8 [n]."""
    def read(stem):
        for name in (stem, stem + ".gz"):
            p = os.path.join(data_dir, name)
            if os.path.exists(p):
                return read_idx(p)
        return read_idx(os.path.join(data_dir, stem + ".gz"))  # raises NotFoundError
    return (read("train-images-idx3-ubyte"), read("train-labels-idx1-ubyte"),
            read("t10k-images-idx3-ubyte"), read("t10k-labels-idx1-ubyte"))
