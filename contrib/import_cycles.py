"""An import-linter contract type, `acyclic_modules`: no import circle between any two modules.

The layers contract keeps each layer from importing the layers above it, but cannot see a
circle inside one layer (`store/sources` importing `store/status_rows`, which imports it back)
nor one between two modules of the same layer (`daemon` and `control/ops`). This contract
finds every such circle in the root package's import graph, which `lint-imports` builds with
grimp: every import counts, the ones inside functions and under `if TYPE_CHECKING:` too (a
circle of annotations is still two modules that cannot be understood one without the other).
A broken contract names each circle, module by module, with the lines that close it.

Registered in `pyproject.toml` (`contract_types`); `lint-imports` is run from the repository's
root, which puts this folder's parent on `sys.path`.
"""

from __future__ import annotations

from typing import Any

import grimp
from importlinter.application import contract_utils, output
from importlinter.application.contract_utils import AlertLevel
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def module_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Every set of modules that import each other, directly or round a circle (the graph's
    strongly connected components of more than one module), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        # Tarjan's algorithm, iteratively (a deep package must not hit the recursion limit).
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.find_modules_directly_imported_by(root))))
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop(0)
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def cycle_imports(graph: grimp.ImportGraph, cycle: list[str]) -> list[str]:
    """The imports inside one circle, as `importer -> imported (l.N: the line)`."""
    members = set(cycle)
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            details = graph.get_import_details(importer=importer, imported=imported) or [{}]
            for d in details:
                where = f"l.{d['line_number']}: {d['line_contents']}" if d else "?"
                lines.append(f"{importer} -> {imported} ({where})")
    return lines


class AcyclicModulesContract(Contract):
    type_name = "acyclic_modules"

    ignore_imports = fields.SetField(subfield=fields.ImportExpressionField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        removal = contract_utils.remove_ignored_imports_and_report(
            graph=graph,
            ignore_imports=self.ignore_imports,  # type: ignore[arg-type]
            unmatched_alerting=AlertLevel.ERROR,
        )
        cycles = module_cycles(graph)
        metadata: dict[str, Any] = {"cycles": [(c, cycle_imports(graph, c)) for c in cycles]}
        return ContractCheck(kept=not cycles, warnings=list(removal.warnings),
                             ignored_import_count=removal.ignored_import_count, metadata=metadata)

    def render_broken_contract(self, check: ContractCheck) -> None:
        for members, imports in check.metadata["cycles"]:
            output.print_error(f"Import circle between {', '.join(members)}:")
            for line in imports:
                output.print_error(f"- {line}", bold=False)
            output.new_line()
