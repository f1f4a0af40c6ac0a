"""Train a small LightningModule for a few steps and print the losses (JSON).

``python lightning_fit.py HOW [log]``: HOW is ``eager`` (no compile), ``module``
(``trainer.fit(torch.compile(lit))``, Lightning's documented pattern) or
``submodule`` (a compiled submodule inside the LightningModule); with ``log``,
``training_step`` calls ``self.log``. Run under ``bytegraph run`` or plain python.
"""
import json
import sys
import warnings

import pytorch_lightning as pl
import torch

how, log = sys.argv[1], "log" in sys.argv[2:]
warnings.filterwarnings("ignore")  # Lightning's advice about workers and loggers


class Regressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
        if how == "submodule":
            self.net = torch.compile(self.net, backend="eager")
        self.losses = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self(x), y)
        if log:
            self.log("train_loss", loss)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        self.losses.append(outputs["loss"].item())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
loader = torch.utils.data.DataLoader(data, batch_size=8)
model = Regressor()
trainer = pl.Trainer(max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False)
trainer.fit(torch.compile(model, backend="eager") if how == "module" else model, loader)
print(json.dumps({"losses": model.losses, "compiled_module": type(trainer.lightning_module).__name__}))
