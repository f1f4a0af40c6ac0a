"""torch's global-state context managers: grad mode, autocast, inference mode.

Each switches the state at trace time (so FakeTensor results carry the right
``requires_grad``/dtype) and inside the graph (so the compiled graph switches
too), and restores it on exit. After a graph break inside one, the generated
code re-creates and re-enters it (the state is global, and the graph boundary
resets it to the frame's entry state), under the grad mode the original saved
to restore on exit.
"""
