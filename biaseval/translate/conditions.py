"""Conditions: one system asked, in several ways, for a gender.

A system's ``conditions:`` are named overrides of its options, each asking for a gender::

    azure:
      backend: azure
      options: {category: gpt-4o}
      conditions:
        gender=female: {requests: female, options: {gender: female}}

Each condition becomes a system of its own, named ``azure[gender=female]``: the base system's
config with the condition's options laid over its own (key by key), ``requests`` set to the gender
asked for and ``condition_of`` to the base system. The base system stays, unconditioned, as the
baseline. A condition's options change its translation-store identity (they must: a condition that
changes no output option is refused), so conditions never share stored translations. The system's
rate limits (``limits``) hold for it and its conditions together: each of them runs under an equal
share of every rate (``shared_limits``), so together they stay within the provider's quota.

This module knows nothing of the run config's model: ``expand`` works on any frozen pydantic model
with ``conditions``, ``options``, ``requests`` and ``condition_of`` fields (``config.SystemConfig``).
"""

from __future__ import annotations

from typing import Any, Callable, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from biaseval.names import problem

GENDERS = ("female", "male", "neutral")
Gender = Literal["female", "male", "neutral"]

M = TypeVar("M", bound=BaseModel)


class Condition(BaseModel):
    """One condition: the gender it asks for and the options that ask for it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: Gender = Field(description="the gender this condition asks the system for: female, male or neutral")
    options: dict[str, Any] = Field(min_length=1, description="options laid over the system's own (the ones "
                                    "that ask for the gender: Azure's gender, an LLM's prompt, ...)")


def conditioned_name(system: str, condition: str) -> str:
    """The name a condition's system is scored and reported under: ``azure[gender=female]``."""
    return f"{system}[{condition}]"


def merged_options(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """The base system's options with a condition's laid over them, key by key (an override's value
    replaces the base's whole value, mappings included)."""
    return {**base, **override}


def expand(systems: dict[str, M], fail: Callable[[tuple, str], Exception]) -> dict[str, M]:
    """Every system followed by one system per condition it declares (in the order declared); the
    base keeps no conditions. ``fail(field, message)`` builds the error raised for a bad name, a
    name taken, or a ``condition_of`` given by hand (only expansion sets it)."""
    out: dict[str, M] = {}
    for name, cfg in systems.items():
        if cfg.condition_of is not None:
            raise fail(("systems", name, "condition_of"), "set for the systems that conditions: makes, not by hand")
        out[name] = cfg.model_copy(update={"conditions": {}}) if cfg.conditions else cfg
    for name, cfg in systems.items():
        for label, condition in cfg.conditions.items():
            field = ("systems", name, "conditions", label)
            if (reason := problem(label)) is not None:  # a name (biaseval/names.py), e.g. gender=female
                raise fail(field, f"a condition's name {reason}")
            full = conditioned_name(name, label)
            if full in out:
                raise fail(field, f"the condition's system {full!r} has the name of another system")
            out[full] = cfg.model_copy(update={
                "conditions": {}, "options": merged_options(cfg.options, condition.options),
                "requests": condition.requests, "condition_of": name})
    # each base directly followed by its conditions (systems run and are reported in this order)
    ordered: dict[str, M] = {}
    for name, cfg in out.items():
        if cfg.condition_of is None:
            family = {name: cfg, **{n: c for n, c in out.items() if c.condition_of == name}}
            ordered.update({n: shared_limits(c, len(family)) for n, c in family.items()})
    return ordered


def shared_limits(cfg: M, systems: int) -> M:
    """``cfg`` with each rate of its ``limits`` (every field but ``burst_s``) divided by ``systems``: a
    system and its conditions share its provider quota, each running under its own limiter."""
    if systems == 1:
        return cfg
    rates = {k: v / systems for k, v in cfg.limits.model_dump().items()
             if k != "burst_s" and isinstance(v, (int, float)) and not isinstance(v, bool)}
    return cfg.model_copy(update={"limits": cfg.limits.model_copy(update=rates)})


def conditions_of(systems: dict[str, Any], base: str) -> list[str]:
    """The names of the systems that are conditions of ``base``."""
    return [name for name, cfg in systems.items() if getattr(cfg, "condition_of", None) == base]
