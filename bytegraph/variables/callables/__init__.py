"""Callables and what calling them does: user functions, methods, closures and
partials (:mod:`.functions`), builtins and ``operator`` functions
(:mod:`.builtins`), ``torch.*`` callables and registered operators
(:mod:`.torch_functions`), Python twins of C functions and functions evaluated
on constants (:mod:`.polyfills`), ``torch.func`` transforms
(:mod:`.func_transforms`, their purity proof :mod:`.func_purity`, FakeTensor
runs :mod:`.func_fake_runs`, ``functional_call`` :mod:`.func_functional_call`),
``copy.copy``/``deepcopy`` (:mod:`.copying`),
``super()`` (:mod:`.super_calls`), and calls replayed after the graph
(``warnings.warn``, logging: :mod:`.deferred_calls`)."""
