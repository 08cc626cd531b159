"""Who may message whom, as a 0/1 matrix: shared by swarm templates and running swarms."""

from __future__ import annotations

from collections.abc import Sequence

from mail.errors import SwarmDefinitionError
from mail.swarms_json.references import target_address_is_interswarm

__all__ = ["adjacency_matrix", "rewired_targets"]


def adjacency_matrix(names: Sequence[str], targets: Sequence[Sequence[str]]) -> list[list[int]]:
    """Row ``i``, column ``j`` is 1 when agent ``i`` lists agent ``j`` as a comm target."""
    return [[int(b in row) for b in names] for row in targets]


def rewired_targets(
    swarm: str,
    names: Sequence[str],
    targets: Sequence[Sequence[str]],
    adj: Sequence[Sequence[int]],
) -> list[list[str]]:
    """Each agent's comm targets after applying ``adj`` (row = sender, column = target).

    Local targets come from the matrix, in agent order; remote ones (``agent@swarm``) are
    kept, and any other (a name that is no agent of the swarm) is dropped. Raises :class:`SwarmDefinitionError` when ``adj`` is not an n by n matrix of 0
    and 1 for the n agents.
    """
    size = len(names)
    if len(adj) != size or any(len(row) != size for row in adj):
        raise SwarmDefinitionError(
            f"adjacency matrix must be {size}x{size}", swarm=swarm, field="adjacency_matrix"
        )
    if any(edge not in (0, 1) for row in adj for edge in row):
        raise SwarmDefinitionError(
            "adjacency matrix entries must be 0 or 1", swarm=swarm, field="adjacency_matrix"
        )
    return [
        [n for n, edge in zip(names, row, strict=True) if edge]
        + [t for t in current if target_address_is_interswarm(t)]
        for current, row in zip(targets, adj, strict=True)
    ]
