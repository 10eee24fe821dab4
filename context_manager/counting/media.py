"""What images, documents and audio cost, by each provider's documented rule.

Media are billed by size, pages or duration, never by the base64 that carries them. Each rule
below cites the page it comes from; where a provider documents no figure, the value is our
conservative guess and says so. Sizes, pages and durations come from the inline bytes
(:mod:`context_manager.messages.media`); what is unknown (a URL image, a file id) is charged
the rule's ``unknown`` default, which :class:`MediaRules` lets you set. Audio is charged by its
duration: read from a WAV header, else estimated from its transcript
(:data:`SPEECH_BYTES_PER_SECOND`), else from its size (:data:`GUESS_BYTES_PER_SECOND`), else
:data:`UNKNOWN_SECONDS`; never by the JSON that references it. Without a provider (the safe
estimate's default rules) a second costs 32 tokens, the highest documented rate (Gemini's).

* **OpenAI** (platform.openai.com/docs/guides/images-vision, "Calculating costs"): tile models
  fit the image in 2048x2048, scale the shortest side down to 768, and charge ``base + tile`` per
  512-px tile (gpt-4o / gpt-4.1 / gpt-4.5: 85 + 170; gpt-5: 70 + 140; o1 / o3: 75 + 150;
  gpt-4o-mini: 2,833 + 5,667); ``detail: "low"`` costs ``base``. Patch models (gpt-4.1-mini,
  gpt-4.1-nano, o4-mini, gpt-5-mini, gpt-5-nano) cover the image with 32-px patches, at most
  1,536 (larger images are scaled down to fit), times a multiplier (1.62, 2.46, 1.72, 1.62,
  2.46). PDFs (docs/guides/pdf-files): the text and an image of each page are both sent; no
  per-page figure is published, so a page is charged 765 (a letter page at high detail) + 1,000
  (a dense page of text), our estimate. Audio: 20 tokens a second, the higher of the Realtime
  API's documented rates (user audio 1 token / 100 ms, assistant audio 1 token / 50 ms).
* **Anthropic** (docs.claude.com/en/docs/build-with-claude/vision, "Calculate image costs"):
  ``tokens = width * height / 750`` after an image whose long edge exceeds 1,568 px (or which
  would exceed ~1,600 tokens) is scaled down, so at most ~1,600. PDFs (build-with-claude/
  pdf-support, "Estimate your costs"): 1,500-3,000 text tokens per page plus each page as an
  image; we charge the top of that range plus a capped page image, 4,600 a page.
* **Gemini** (ai.google.dev/gemini-api/docs/tokens, "Multimodal tokens"): an image with both
  sides <= 384 px costs 258; larger images are cut into 768x768 tiles of 258 each; video 263 a
  second, audio 32 a second; a PDF page is an image, 258 (docs/document-processing). Gemini 3
  (docs/media-resolution, default resolutions): 1,120 per image, 560 per PDF page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..messages import Image, Media
from .openai_formula import ImageCosts, image_tokens

__all__ = [
    "CLAUDE",
    "GEMINI",
    "GEMINI_3",
    "MediaRules",
    "claude_image_tokens",
    "gemini_image_tokens",
    "media_rules_for",
    "openai_media",
    "patch_image_tokens",
]

#: Duration charged when an audio/video part's length cannot be read, and the byte rate used to
#: guess it from the size (16 kbit/s: lower than real speech codecs, so the guess runs long).
UNKNOWN_SECONDS = 60.0
GUESS_BYTES_PER_SECOND = 2_000
#: An audio part with a transcript but no readable duration lasts as long as saying it takes:
#: 12 UTF-8 bytes of transcript a second, slower than conversational speech in any script
#: (English ~15 characters a second; Chinese ~4.5 characters, ~13 bytes; Russian ~25 bytes), so
#: the duration, and the tokens, run long rather than short.
SPEECH_BYTES_PER_SECOND = 12.0
#: Pages charged when a document's pages cannot be read (a URL or file id).
UNKNOWN_PAGES = 10
_GPT_4O_TILES = ImageCosts()


def claude_image_tokens(width: int, height: int) -> int:
    """Anthropic: ``w*h/750`` after the long edge is scaled to 1,568 px; capped at 1,600."""
    scale = min(1.0, 1568 / max(width, height))
    w, h = width * scale, height * scale
    return min(math.ceil(w * h / 750), 1600)


def gemini_image_tokens(width: int, height: int) -> int:
    """Gemini 2.x: 258 for an image within 384x384, else 258 per 768x768 tile."""
    if width <= 384 and height <= 384:
        return 258
    return 258 * math.ceil(width / 768) * math.ceil(height / 768)


def patch_image_tokens(width: int, height: int, multiplier: float) -> int:
    """OpenAI patch models: 32-px patches (at most 1,536, scaling down to fit) x multiplier."""
    patches = math.ceil(width / 32) * math.ceil(height / 32)
    if patches > 1536:
        shrink = math.sqrt(32 * 32 * 1536 / (width * height))
        w, h = width * shrink, height * shrink
        # Scale further so the width or height is a whole number of patches.
        shrink = min(math.floor(w / 32) / (w / 32), math.floor(h / 32) / (h / 32))
        width, height = int(w * shrink), int(h * shrink)
        patches = min(math.ceil(width / 32) * math.ceil(height / 32), 1536)
    return math.ceil(patches * multiplier)


@dataclass(frozen=True, slots=True)
class MediaRules:
    """One provider's media costs. ``image`` picks the image rule: ``"openai"`` (tiles, with
    ``tiles``), ``"patches"`` (with ``patch_multiplier``), ``"claude"``, ``"gemini"``, or
    ``"flat"`` (``unknown_image`` per image whatever its size)."""

    name: str
    image: str = "flat"
    unknown_image: int = 1_600
    tiles: ImageCosts = _GPT_4O_TILES
    patch_multiplier: float = 1.0
    per_image: int = 0  # a fixed cost per image (Gemini 3), overriding the size rule
    per_page: int = 1_765
    per_second: float = 32.0
    per_video_second: float = 263.0

    def image_tokens(self, image: Image) -> int:
        if self.per_image:
            return self.per_image
        if self.image == "openai":
            return image_tokens(image, self.tiles)
        width, height = image.width, image.height
        if not width or not height or width <= 0 or height <= 0 or self.image == "flat":
            return self.unknown_image
        if self.image == "claude":
            return claude_image_tokens(width, height)
        if self.image == "gemini":
            return gemini_image_tokens(width, height)
        return patch_image_tokens(width, height, self.patch_multiplier)

    def media_tokens(self, item: Media) -> int:
        if item.kind == "document":
            return self.per_page * (item.pages if item.pages is not None else UNKNOWN_PAGES)
        seconds = item.seconds
        if seconds is None and item.transcript:
            spoken = len(item.transcript.encode("utf-8", "surrogatepass"))
            seconds = spoken / SPEECH_BYTES_PER_SECOND
        if seconds is None:
            seconds = item.size / GUESS_BYTES_PER_SECOND if item.size else UNKNOWN_SECONDS
        rate = self.per_video_second if item.kind == "video" else self.per_second
        return math.ceil(seconds * rate)

    def cost(self, images: tuple[Image, ...], media: tuple[Media, ...]) -> int:
        """Tokens of a message's images and media parts."""
        return sum(map(self.image_tokens, images)) + sum(map(self.media_tokens, media))


CLAUDE = MediaRules("claude", image="claude", unknown_image=1_600, per_page=4_600)
GEMINI = MediaRules("gemini", image="gemini", unknown_image=1_032, per_page=258)
GEMINI_3 = MediaRules("gemini-3", image="gemini", per_image=1_120, per_page=560)

# (model prefix, base, tile) for tile models; longest prefix wins.
_OPENAI_TILES = (
    ("gpt-4o-mini", 2_833, 5_667),
    ("gpt-5", 70, 140),
    ("gpt-5-chat", 70, 140),
    ("o1", 75, 150),
    ("o3", 75, 150),
)
_OPENAI_PATCHES = (
    ("gpt-4.1-mini", 1.62),
    ("gpt-4.1-nano", 2.46),
    ("o4-mini", 1.72),
    ("gpt-5-mini", 1.62),
    ("gpt-5-nano", 2.46),
)


def _len(row: tuple[str, object, object] | tuple[str, float]) -> int:
    return len(row[0])


def openai_media(model: str | None, tiles: ImageCosts | None = None) -> MediaRules:
    """OpenAI's rule for ``model`` (gpt-4o's tiles when unknown); ``tiles`` overrides them."""
    name = (model or "").lower().removeprefix("openai/")
    patch = max((p for p in _OPENAI_PATCHES if name.startswith(p[0])), key=_len, default=None)
    pdf, audio = 765 + 1_000, 20.0
    if patch is not None and tiles is None:
        unknown = patch_image_tokens(1024, 1024, patch[1])
        return MediaRules(
            f"openai:{patch[0]}",
            image="patches",
            unknown_image=unknown,
            patch_multiplier=patch[1],
            per_page=pdf,
            per_second=audio,
        )
    if tiles is None:
        match = max((t for t in _OPENAI_TILES if name.startswith(t[0])), key=_len, default=None)
        base, tile = (match[1], match[2]) if match else (85, 170)
        tiles = ImageCosts(base, tile, base + 4 * tile)  # unknown size: a 1024x1024 image
    return MediaRules("openai", image="openai", tiles=tiles, per_page=pdf, per_second=audio)


def media_rules_for(provider: str, model: str | None = None) -> MediaRules | None:
    """The documented rules of ``provider`` (``openai``, ``anthropic``, ``google``), else None."""
    if provider == "openai":
        return openai_media(model)
    if provider == "anthropic":
        return CLAUDE
    if provider == "google":
        name = (model or "").lower()
        return GEMINI_3 if name.startswith("gemini-3") else GEMINI
    return None
