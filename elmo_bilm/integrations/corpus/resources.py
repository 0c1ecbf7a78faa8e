"""What a corpus run needs of Ray: Ray Data installed (`elmo-bilm[ray]`), and a cluster that can
hold the workers asked for (Ray itself would wait for them forever)."""

from typing import Any

from elmo_bilm.formats.parquet import import_extra
from elmo_bilm.utils.files import UsageError


def require_ray() -> Any:
    """`ray` with Ray Data."""
    import_extra("ray.data", "elmo-embed-corpus needs Ray Data")
    return import_extra("ray", "elmo-embed-corpus needs Ray Data")


def _count(number: float, unit: str) -> str:
    return f"no {unit}" if number == 0 else f"{number:g} {unit}{'s' if number != 1 else ''}"


def check_resources(ray: Any, workers: int, cpus: int, gpus: float) -> None:
    """Refuse (one line) `workers` actors of `cpus` CPUs and `gpus` GPUs that the Ray cluster
    cannot hold: Ray itself would wait for them forever."""
    total = ray.cluster_resources()
    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")] or [total]
    has_cpus, has_gpus = total.get("CPU", 0.0), total.get("GPU", 0.0)
    has = f"{_count(has_cpus, 'CPU')} ({_count(has_gpus, 'GPU')})"
    if gpus > 0:
        largest = max(node.get("GPU", 0.0) for node in nodes)
        flag = f"--gpus-per-worker {gpus:g}"
        if has_gpus == 0:
            raise UsageError(
                f"{flag} asks for {_count(gpus, 'GPU')} per worker; the Ray cluster has no GPU "
                f"({_count(has_cpus, 'CPU')})"
            )
        if largest < gpus:
            raise UsageError(
                f"{flag} asks for {_count(gpus, 'GPU')} per worker; the Ray cluster's largest "
                f"machine has {_count(largest, 'GPU')}"
            )
        if workers * gpus > has_gpus:
            raise UsageError(
                f"{flag} --num-workers {workers} asks for {_count(workers * gpus, 'GPU')} "
                f"({gpus:g} per worker); the Ray cluster has {_count(has_gpus, 'GPU')} "
                f"({_count(has_cpus, 'CPU')})"
            )
    largest = max(node.get("CPU", 0.0) for node in nodes)
    if cpus > largest or workers * cpus > has_cpus:
        raise UsageError(
            f"--cpus-per-worker {cpus} --num-workers {workers} asks for "
            f"{_count(workers * cpus, 'CPU')} ({cpus} per worker); the Ray cluster has {has}"
            + (f", {largest:g} on its largest machine" if len(nodes) > 1 else "")
        )
