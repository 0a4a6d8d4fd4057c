"""The built-in catalogue, one file per family.

Import order is catalogue order, which is the order an arm applies its modifications in:
modifications that reshape the model (structure) come first, so that the others read its final
sizes. The order is spelled out here, not left to an import sorter.
"""

import importlib

from archaudit.names import BASELINE

ORDER = (
    BASELINE,
    "structure",
    "position",
    "attention_logits",
    "attention_output",
    "residual",
    "norm",
    "mlp",
    "moe",
    "sharing",
    "objective",
    "recipe",
)

for _module in ORDER:
    importlib.import_module(f"archaudit.mods.catalogue.{_module}")
