# SPDX-License-Identifier: Apache-2.0
"""A model's config.json in, clpe's rotary settings out: the mapping behind
Rope.from_hf_config and HostRope.from_hf_config.

The fields read are the ones Hugging Face transformers' rope_init_fns read
(modeling_rope_utils.py) and the families' own aliases (GPT-J's n_embd,
n_head, n_positions and rotary_dim; GPT-NeoX's rotary_pct and
rotary_emb_base; DeepSeek's qk_rope_head_dim). Scalings follow the
transformers version clpe's frequencies follow (see docs/rotary.md), which
is what vLLM's get_rope does with the same dict. The C tool's
`clpe rope-cache --hf-config` maps a config the same way, and a test checks
that both give the same cos/sin bytes.

A field that is missing where a scaling needs it, of the wrong type, or a
rope_type clpe does not know is refused with ConfigError, whose message
names the field as config.json spells it; a value that clpe's own checks
refuse comes back as clpe.Error naming the same field (see _RopeConfig).
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

# config.json as given: a path to it, or the dict it holds.
HfConfig = Union[str, "os.PathLike[str]", Mapping[str, Any]]

# model_type values whose rotary pairs adjacent elements (2i, 2i+1) rather
# than Hugging Face's rotate_half halves (i, i + rotary_dim / 2): GPT-J and
# CodeGen (rotate_every_two), DeepSeek V2/V3 (their reference code rotates
# complex pairs; vLLM builds them with is_neox_style=False).
INTERLEAVED_FAMILIES = frozenset({"gptj", "codegen", "deepseek_v2", "deepseek_v3"})

# The families whose published configs the tests run through this mapping,
# by model_type. Others map by the same rules with half-split pairs, the
# rotate_half convention of every other rotary model in transformers.
KNOWN_FAMILIES: Dict[str, str] = {
    "llama": "Llama 2, Llama 3, 3.1, 3.2, 3.3, CodeLlama, Vicuna",
    "mistral": "Mistral",
    "mixtral": "Mixtral",
    "qwen2": "Qwen2, Qwen2.5",
    "qwen2_vl": "Qwen2-VL (M-RoPE)",
    "qwen2_5_vl": "Qwen2.5-VL (M-RoPE)",
    "phi3": "Phi-3, Phi-3.5 (LongRoPE)",
    "phi": "Phi-2",
    "deepseek_v3": "DeepSeek-V3 (YaRN, interleaved)",
    "deepseek_v2": "DeepSeek-V2 (YaRN, interleaved)",
    "gpt_neox": "GPT-NeoX, Pythia",
    "gptj": "GPT-J (interleaved)",
    "gemma": "Gemma",
    "gemma2": "Gemma 2",
}

# rope_type values and the scaling clpe gives each ("mrope" is Qwen2-VL's
# name for default frequencies with position streams).
_SCALINGS = {"default": "default", "linear": "linear", "dynamic": "dynamic", "yarn": "yarn",
             "llama3": "llama3", "longrope": "longrope", "mrope": "default"}


class ConfigError(ValueError):
    """A config.json clpe cannot map: .field is the field as config.json
    spells it (rope_scaling's keys as rope_scaling.KEY)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__("clpe: config.json's %s %s" % (field, message))


class ConfigTypeError(ConfigError, TypeError):
    """A field of config.json of the wrong type."""


def load(config: HfConfig) -> Dict[str, Any]:
    """The dict of config.json: read from a path, or copied from a mapping."""
    if isinstance(config, Mapping):
        return dict(config)
    if isinstance(config, (str, os.PathLike)):
        with open(config, encoding="utf-8") as f:
            data = json.load(f, object_pairs_hook=_unique_keys)
        if not isinstance(data, dict):
            raise ConfigTypeError("top level", "must be a JSON object, got %s"
                                  % type(data).__name__)
        return data
    raise TypeError("clpe: config must be a config.json path or its dict, got %s"
                    % type(config).__name__)


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """A JSON object whose keys are all different: a key given twice is
    ambiguous (json.load would keep the last, others the first)."""
    table: Dict[str, Any] = {}
    for key, value in pairs:
        if key in table:
            raise ConfigError(key, "is given twice (duplicate key)")
        table[key] = value
    return table


def _number(table: Mapping[str, Any], key: str, where: str) -> Optional[float]:
    """table[key] as a float; None when absent or null; refused when not a number."""
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigTypeError(where + key, "must be a number, got %r (%s)"
                              % (value, type(value).__name__))
    return float(value)


def _integer(table: Mapping[str, Any], key: str, where: str = "") -> Optional[int]:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigTypeError(where + key, "must be a positive integer, got %r" % (value,))
    return value


def _first(table: Mapping[str, Any], keys: Tuple[str, ...]) -> Tuple[Optional[int], str]:
    """The first of several aliases present, as a positive integer, and its name."""
    for key in keys:
        value = _integer(table, key)
        if value is not None:
            return value, key
    return None, keys[0]


def _numbers(table: Mapping[str, Any], key: str, where: str, count: int) -> List[float]:
    value = table.get(key)
    if value is None:
        raise ConfigError(where + key, "is missing; rope_type longrope needs it")
    if not isinstance(value, list) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        raise ConfigTypeError(where + key, "must be a list of numbers, got %r" % (value,))
    if len(value) != count:
        raise ConfigError(where + key, "has %d values; rotary_dim / 2 = %d pairs need %d"
                          % (len(value), count, count))
    return [float(x) for x in value]


class Mapped:
    """What a config.json says about rotary: head_dim, the keywords of
    Rope/HostRope, and for each clpe field the config.json field it came
    from (so a refusal names the field the user wrote)."""

    def __init__(self, model_type: Optional[str], head_dim: int, settings: Dict[str, Any],
                 fields: Dict[str, str]) -> None:
        self.model_type = model_type
        self.head_dim = head_dim
        self.settings = settings
        self.fields = fields

    def __repr__(self) -> str:
        return "Mapped(model_type=%r, head_dim=%d, settings=%r)" % (
            self.model_type, self.head_dim, self.settings)


def map_config(config: HfConfig) -> Mapped:
    """Map a config.json (path or dict) to clpe's rotary settings."""
    top = load(config)
    model_type = top.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigTypeError("model_type", "must be a string, got %r" % (model_type,))
    # Multimodal configs may keep the language model's fields in text_config.
    source = dict(top)
    text = top.get("text_config")
    if isinstance(text, Mapping):
        source.update(text)
    fields: Dict[str, str] = {}
    settings: Dict[str, Any] = {}

    # head_dim: DeepSeek rotates only its qk_rope_head_dim part of each head
    # (its HF config sets head_dim to it for the rotary); else head_dim, else
    # hidden_size / num_attention_heads (getattr(config, "head_dim", None) or ...).
    if model_type in ("deepseek_v2", "deepseek_v3"):
        head_dim = _integer(source, "qk_rope_head_dim")
        if head_dim is None:
            raise ConfigError("qk_rope_head_dim", "is missing; %s rotates that many elements "
                              "of each head" % model_type)
        fields["head_dim"] = "qk_rope_head_dim"
    else:
        given = _integer(source, "head_dim")
        if given is not None:
            head_dim = given
            fields["head_dim"] = "head_dim"
        else:
            hidden, hidden_name = _first(source, ("hidden_size", "n_embd", "d_model"))
            heads, heads_name = _first(source, ("num_attention_heads", "n_head", "num_heads"))
            if hidden is None:
                raise ConfigError(hidden_name, "is missing (and there is no head_dim)")
            if heads is None:
                raise ConfigError(heads_name, "is missing (and there is no head_dim)")
            head_dim = hidden // heads
            fields["head_dim"] = "%s / %s" % (hidden_name, heads_name)

    # rotary_dim: GPT-J's rotary_dim, else int(head_dim * partial_rotary_factor)
    # (GPT-NeoX: rotary_pct), else the whole head.
    rotary_dim = _integer(source, "rotary_dim")
    if rotary_dim is not None:
        fields["rotary_dim"] = "rotary_dim"
    else:
        for key in ("partial_rotary_factor", "rotary_pct"):
            fraction = _number(source, key, "")
            if fraction is not None:
                if not 0 < fraction <= 1:
                    raise ConfigError(key, "must be in (0, 1], got %r" % fraction)
                rotary_dim = int(head_dim * fraction)
                fields["rotary_dim"] = "int(head_dim * %s)" % key
                break
    if rotary_dim is not None and rotary_dim != head_dim:
        settings["rotary_dim"] = rotary_dim
    pairs = (rotary_dim or head_dim) // 2

    for key in ("rope_theta", "rotary_emb_base"):
        base = _number(source, key, "")
        if base is not None:
            settings["base"] = base
            fields["base"] = key
            break
    else:
        settings["base"] = 10000.0  # every family's default (GPT-J's fixed base)
    settings["pairing"] = "interleaved" if model_type in INTERLEAVED_FAMILIES else "half_split"

    max_position, max_name = _first(source, ("max_position_embeddings", "n_positions"))
    scaling = source.get("rope_scaling")
    if scaling is None:
        return Mapped(model_type, head_dim, settings, fields)
    if not isinstance(scaling, Mapping):
        raise ConfigTypeError("rope_scaling", "must be an object or null, got %r" % (scaling,))
    where = "rope_scaling."
    type_key = "rope_type" if "rope_type" in scaling else "type"
    rope_type = scaling.get(type_key)
    if rope_type is None and "mrope_section" in scaling:
        rope_type = "default"
    if rope_type is None:
        raise ConfigError(where + "rope_type", "is missing (nor is there a type)")
    if not isinstance(rope_type, str):
        raise ConfigTypeError(where + type_key, "must be a string, got %r" % (rope_type,))
    if rope_type not in _SCALINGS:
        raise ConfigError(where + type_key, "%r is not a rotary scaling clpe knows (%s)"
                          % (rope_type, ", ".join(sorted(_SCALINGS))))
    kind = _SCALINGS[rope_type]
    settings["scaling"] = kind
    fields["scaling"] = where + type_key

    section = scaling.get("mrope_section")
    if section is not None:
        if not isinstance(section, list) or not all(
                isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in section):
            raise ConfigTypeError(where + "mrope_section",
                                  "must be a list of non-negative integers, got %r" % (section,))
        settings["mrope_section"] = list(section)
        fields["section"] = where + "mrope_section"
    elif rope_type == "mrope":
        raise ConfigError(where + "mrope_section", "is missing; rope_type mrope needs it")

    def need(key: str) -> float:
        value = _number(scaling, key, where)
        if value is None:
            raise ConfigError(where + key, "is missing; rope_type %s needs it" % rope_type)
        return value

    def take(clpe_name: str, key: str, value: Optional[float]) -> None:
        if value is not None:
            settings[clpe_name] = value
            fields[clpe_name] = where + key

    def max_positions(why: str) -> float:
        if max_position is None:
            raise ConfigError(max_name, "is missing; %s" % why)
        return float(max_position)

    if kind in ("linear", "dynamic", "yarn", "llama3"):
        take("factor", "factor", need("factor"))
    if kind == "dynamic":
        settings["original_max_position"] = max_positions(
            "rope_type dynamic grows the base beyond it")
        fields["original_max_position"] = max_name
    elif kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            take(key, key, need(key))
        take("original_max_position", "original_max_position_embeddings",
             need("original_max_position_embeddings"))
    elif kind == "yarn":
        # factor as given, as vLLM takes it (transformers swaps in
        # max_position_embeddings / original_max_position_embeddings when both
        # exist; published configs that give both agree: docs/engines.md)
        original = _number(scaling, "original_max_position_embeddings", where)
        if original is not None:
            take("original_max_position", "original_max_position_embeddings", original)
        else:
            settings["original_max_position"] = max_positions(
                "rope_type yarn without original_max_position_embeddings ramps over it")
            fields["original_max_position"] = max_name
        for key in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor"):
            take(key, key, _number(scaling, key, where))
        truncate = scaling.get("truncate")
        if truncate is not None:
            if not isinstance(truncate, bool):
                raise ConfigTypeError(where + "truncate",
                                      "must be true or false, got %r" % (truncate,))
            settings["truncate"] = truncate
    elif kind == "longrope":
        settings["short_factor"] = _numbers(scaling, "short_factor", where, pairs)
        settings["long_factor"] = _numbers(scaling, "long_factor", where, pairs)
        fields["short_factor"] = where + "short_factor"
        fields["long_factor"] = where + "long_factor"
        attention = _number(scaling, "attention_factor", where)
        original = _number(source, "original_max_position_embeddings", "")
        if original is not None and original > 0:
            # Phi-3: the amplitude's factor is the context's growth
            # (transformers: factor = max_position_embeddings / original_...)
            factor: Optional[float] = max_positions(
                "LongRoPE's factor is max_position_embeddings / "
                "original_max_position_embeddings") / original
            fields["factor"] = "%s / original_max_position_embeddings" % max_name
            fields["original_max_position"] = "original_max_position_embeddings"
        elif original is not None:
            factor = 0.0  # the library refuses the original length, naming it
            fields["original_max_position"] = "original_max_position_embeddings"
        else:
            original = max_positions("LongRoPE without original_max_position_embeddings "
                                     "switches factors there")
            factor = _number(scaling, "factor", where)
            fields["factor"] = where + "factor"
            fields["original_max_position"] = max_name
        settings["original_max_position"] = original
        take("attention_factor", "attention_factor", attention)
        if attention is None and (factor is None or factor <= 1):
            # transformers: attention_factor = 1.0 when factor <= 1
            settings["attention_factor"], factor = 1.0, 0.0
        settings["factor"] = 0.0 if factor is None else factor
    return Mapped(model_type, head_dim, settings, fields)
