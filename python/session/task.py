"""TaskSpec: where this process stands in a distributed job, from its launcher's environment."""

from . import _core

__all__ = ["TaskSpec"]


class TaskSpec:
    """This process's place in a job: ``rank`` of ``size``, ``local_rank`` of ``local_size``
    on its machine, the data shard it reads (``shard_index`` of ``shard_count``), ``is_chief``
    (rank 0: writes checkpoints and logs), ``launcher`` ("open-mpi", "pmi", "slurm", "none",
    "explicit"), and the evaluator flags ``has_evaluator`` / ``is_evaluator``."""

    __slots__ = ("rank", "size", "local_rank", "local_size", "shard_index", "shard_count",
                 "is_chief", "launcher", "has_evaluator", "is_evaluator")

    def __init__(self, rank=0, size=1, local_rank=0, local_size=1, shard_index=None,
                 shard_count=None, is_chief=None, launcher="explicit", has_evaluator=False,
                 is_evaluator=False):
        if not 0 <= rank < size:
            raise ValueError(f"TaskSpec: rank {rank} is not below size {size}")
        self.rank, self.size = int(rank), int(size)
        self.local_rank, self.local_size = int(local_rank), int(local_size)
        self.shard_index = self.rank if shard_index is None else int(shard_index)
        self.shard_count = self.size if shard_count is None else int(shard_count)
        self.is_chief = self.rank == 0 if is_chief is None else bool(is_chief)
        self.launcher = launcher
        self.has_evaluator, self.is_evaluator = bool(has_evaluator), bool(is_evaluator)

    @classmethod
    def from_env(cls):
        """Reads the launcher's variables (Open MPI's, PMI's, Slurm's; first set wins) and
        SESSION_SHARD_INDEX, SESSION_SHARD_COUNT and SESSION_EVALUATOR. Without a launcher:
        task 0 of 1. A malformed value raises InvalidArgumentError naming the variable."""
        return cls(**_core.task_spec_from_env())

    @property
    def workers(self):
        """The tasks that train: size, or size - 1 with an evaluator."""
        return self.size - 1 if self.has_evaluator else self.size

    def shard_range(self, n):
        """The ``(begin, end)`` of the ``n`` examples this task reads: contiguous, sizes
        differing by at most one, every example in exactly one shard."""
        return _core.task_shard_range(self.shard_index, self.shard_count, int(n))

    def __repr__(self):
        return (f"TaskSpec(rank={self.rank}, size={self.size}, local_rank={self.local_rank}, "
                f"local_size={self.local_size}, shard_index={self.shard_index}, "
                f"shard_count={self.shard_count}, launcher={self.launcher!r})")
