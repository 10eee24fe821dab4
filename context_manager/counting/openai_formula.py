"""OpenAI's published prompt-accounting rules, as pure functions of a text counter.

Kept apart from any tokenizer so the same arithmetic serves tiktoken and tests alike:

* tool (function) definitions: the per-function / per-property / enum constants from OpenAI's
  cookbook "How to count tokens with tiktoken" (section 7), which it checks against the API
  (gpt-4o: 101 prompt tokens for its weather example, gpt-4: 105);
* images: the tile formula from OpenAI's vision guide (fit in 2048x2048, shortest side down to
  768, 512-pixel tiles; ``base + tile_cost * tiles``; low detail = ``base``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidMessageError
from ..messages import Image, to_json_text

CountText = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class ToolConstants:
    """Cookbook constants: tokens added per function, property block, property, enum."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


#: gpt-4o and later (o200k models).
TOOLS_O200K = ToolConstants(func_init=7)
#: gpt-4 and gpt-3.5-turbo (cl100k models).
TOOLS_CL100K = ToolConstants(func_init=10)


def tool_constants_for(encoding_name: str) -> ToolConstants:
    return TOOLS_CL100K if encoding_name == "cl100k_base" else TOOLS_O200K


def _function_of(tool: Any, index: int) -> Mapping[str, Any]:
    """Accept OpenAI ``{"type":"function","function":{...}}``, bare or Anthropic definitions."""
    if not isinstance(tool, Mapping):
        raise InvalidMessageError(
            f"tool definition {index} must be an object, got {type(tool).__name__}",
            hint="pass OpenAI {'type': 'function', 'function': {...}} or Anthropic tool dicts",
        )
    inner = tool.get("function")
    function = inner if isinstance(inner, Mapping) else tool
    if not isinstance(function.get("name"), str):
        raise InvalidMessageError(f"tool definition {index} has no string 'name'")
    return function


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else to_json_text(value)


def tool_definition_tokens(tools: Sequence[Any], count: CountText, k: ToolConstants) -> int:
    """Tokens that tool/function definitions add to a prompt (0 for no tools)."""
    if not tools:
        return 0
    total = 0
    for index, tool in enumerate(tools):
        function = _function_of(tool, index)
        total += k.func_init
        description = _as_text(function.get("description") or "").removesuffix(".")
        total += count(f"{function['name']}:{description}")
        schema = function.get("parameters", function.get("input_schema")) or {}
        properties = schema.get("properties") if isinstance(schema, Mapping) else None
        if not isinstance(properties, Mapping) or not properties:
            continue
        total += k.prop_init
        for key, prop in properties.items():
            total += k.prop_key
            prop = prop if isinstance(prop, Mapping) else {}
            enum = prop.get("enum")
            if isinstance(enum, Sequence) and not isinstance(enum, str):
                total += k.enum_init
                for item in enum:
                    total += k.enum_item + count(_as_text(item))
            p_type = _as_text(prop.get("type", ""))
            p_desc = _as_text(prop.get("description") or "").removesuffix(".")
            total += count(f"{key}:{p_type}:{p_desc}")
    return total + k.func_end


@dataclass(frozen=True, slots=True)
class ImageCosts:
    """Per-image token costs of one model family; ``unknown_size`` is charged without width/height.

    The default ``unknown_size`` (765) is what a 1024x1024 high-detail image costs on gpt-4o, a
    middle-of-the-road guess; set it to your typical image size's cost.
    """

    base: int = 85
    tile: int = 170
    unknown_size: int = 765


#: gpt-4o-mini bills images at a much higher token rate (same price per image).
IMAGES_GPT_4O_MINI = ImageCosts(base=2833, tile=5667, unknown_size=2833 + 4 * 5667)


def image_tokens(image: Image, costs: ImageCosts) -> int:
    """OpenAI's tile formula; ``detail`` low = base only, high/auto with a size = tiles."""
    if image.detail == "low":
        return costs.base
    if not image.width or not image.height or image.width <= 0 or image.height <= 0:
        return costs.unknown_size
    width, height = float(image.width), float(image.height)
    if max(width, height) > 2048:
        scale = 2048 / max(width, height)
        width, height = width * scale, height * scale
    if min(width, height) > 768:
        scale = 768 / min(width, height)
        width, height = width * scale, height * scale
    tiles = math.ceil(width / 512) * math.ceil(height / 512)
    return costs.base + costs.tile * tiles
