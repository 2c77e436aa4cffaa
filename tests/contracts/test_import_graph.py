"""The import graph has no cycle: a module that imports another which imports it back (directly or around a loop)
hides which of them is the lower layer, and an import inside a function only hides the loop from the layers
contract. grimp (import-linter's graph) sees every import, those inside functions too."""

from __future__ import annotations

import grimp


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, imported = work[-1]
            following = next(imported, None)
            if following is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif following not in index:
                index[following] = low[following] = len(index)
                stack.append(following)
                on_stack.add(following)
                work.append((following, iter(sorted(graph.find_modules_directly_imported_by(following)))))
            elif following in on_stack:
                low[module] = min(low[module], index[following])
    return found


def test_no_module_of_maximus_imports_itself_around_a_loop() -> None:
    assert _cycles(grimp.build_graph("maximus")) == []


def test_the_cycle_finder_finds_a_loop() -> None:
    """A graph with a loop of three and a loose end: the test above could not fail without this."""
    graph = grimp.ImportGraph()
    for module in ("a", "a.b", "a.c", "a.d", "a.e"):
        graph.add_module(module)
    for importer, imported in (("a.b", "a.c"), ("a.c", "a.d"), ("a.d", "a.b"), ("a.d", "a.e")):
        graph.add_import(importer=importer, imported=imported)
    assert _cycles(graph) == [["a.b", "a.c", "a.d"]]
