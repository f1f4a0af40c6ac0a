"""Test setup: bugs in bytegraph and backend failures raise instead of silently running natively,
and every test starts with empty caches."""
import pytest
import torch

import bytegraph


@pytest.fixture(autouse=True)
def _fresh_bytegraph():
    bytegraph.reset()
    torch.manual_seed(0)
    with bytegraph.config.patch(raise_on_internal_error=True, raise_on_backend_error=True):
        yield
    bytegraph.reset()
