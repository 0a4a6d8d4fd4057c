"""A recipe's identity: the hash that says whether two runs were trained under one recipe (R1).

It lives in the data package, not beside `Recipe`, because a prepared corpus is identified by
its content hash, which only the data package's index reader knows. Configs stay below data.
"""

from __future__ import annotations

import dataclasses
import hashlib

from archaudit.config import Recipe, canonical_json, to_dict
from archaudit.data.shards import corpus_identity


def recipe_hash(recipe: Recipe) -> str:
    """sha256 of the recipe's canonical JSON, operational fields left out.

    Canonical means sorted keys, no whitespace and floats by repr. The hash is therefore the
    same on every machine and in every Python process. The corpus counts by its content when
    it is a prepared one, and by its name as written otherwise.
    """
    values = to_dict(recipe)
    hashed = {
        f.name: values[f.name] for f in dataclasses.fields(recipe) if f.metadata.get("hashed", True)
    }
    hashed["corpus"] = corpus_identity(recipe.corpus_path, recipe.corpus)
    return hashlib.sha256(canonical_json(hashed).encode()).hexdigest()
