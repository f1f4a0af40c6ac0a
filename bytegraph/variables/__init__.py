"""VariableTrackers: what the translator's stack and locals hold, one kind per
kind of Python value, in subpackages by kind (``tensors/``, ``containers/``,
``callables/``, ``objects/``, ``torch_state/``) over a small core: the base
class (``base``), constants (``constant``), exceptions raised in the trace
(``exceptions``), the operator protocol and folding (``operators``), the NULL
and other stack-only values (``stack_values``), what VTs use of the translator
(``tx``), and the builder that wraps real values (``builder``)."""
