"""How a data set is split over the clients of a federation: index arrays, one per client.

    iid           a permutation drawn from the seed, cut into N near-equal parts
    shards        client k takes the k-th contiguous slice, in the data's order
    dirichlet:A   per class, the client proportions drawn from Dirichlet(A, ..., A) (seeded);
                  redrawn (up to 20 times) until every client holds at least ``min_size``

Each part is sorted (a client's examples keep the data's order; its trainer shuffles them).
"""
import numpy as np

from .._capi import ArgumentError

_REDRAWS = 20


def parse(spec):
    """``"iid"``, ``"shards"`` or ``"dirichlet:A"`` -> (kind, alpha or None)."""
    if spec in ("iid", "shards"):
        return spec, None
    if isinstance(spec, str) and spec.startswith("dirichlet:"):
        text = spec[len("dirichlet:"):]
        try:
            alpha = float(text)
        except ValueError:
            alpha = float("nan")
        if not (alpha > 0 and np.isfinite(alpha)):
            raise ArgumentError(f"--partition {spec} ({text}): the concentration A of "
                                f"dirichlet:A is a number > 0")
        return "dirichlet", alpha
    raise ArgumentError(f"--partition {spec} ({spec}): expected iid, shards or dirichlet:A")


def split(spec, n_clients, n_examples, labels=None, seed=0, min_size=1):
    """Index arrays (int64, sorted) of the examples of each of ``n_clients`` clients.
    ``labels``: the class of each example (dirichlet only). Raises ArgumentError when some
    client would get fewer than ``min_size`` examples (the step's batch: a client trains whole
    batches)."""
    kind, alpha = parse(spec)
    if n_clients > n_examples // max(min_size, 1):
        raise ArgumentError(f"--clients {n_clients} ({n_examples} examples, batch {min_size}): "
                            f"each client needs at least one batch: at most "
                            f"{n_examples // max(min_size, 1)} clients")
    rng = np.random.default_rng(seed)
    if kind == "shards":
        return [np.asarray(p, np.int64) for p in np.array_split(np.arange(n_examples), n_clients)]
    if kind == "iid":
        return [np.sort(p).astype(np.int64)
                for p in np.array_split(rng.permutation(n_examples), n_clients)]
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iub":
        raise ArgumentError(f"--partition {spec} (labels {labels.dtype} {list(labels.shape)}): "
                            f"dirichlet splits by class: it needs one integer label per example")
    classes = np.unique(labels)
    smallest = 0
    for _ in range(_REDRAWS):
        parts = [[] for _ in range(n_clients)]
        for c in classes:
            idx = rng.permutation(np.flatnonzero(labels == c))
            p = rng.dirichlet(np.full(n_clients, alpha))
            cuts = (np.cumsum(p)[:-1] * len(idx)).astype(np.int64)
            for k, chunk in enumerate(np.split(idx, cuts)):
                parts[k].append(chunk)
        parts = [np.sort(np.concatenate(p)).astype(np.int64) for p in parts]
        smallest = min(len(p) for p in parts)
        if smallest >= min_size:
            return parts
    raise ArgumentError(f"--partition {spec} ({n_clients} clients, {n_examples} examples, "
                        f"smallest client {smallest}, batch {min_size}): no draw in {_REDRAWS} "
                        f"gave every client a batch: fewer --clients or a larger A")
