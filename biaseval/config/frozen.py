"""The base of every config model: unknown fields are errors, a loaded config never changes."""

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
