"""What a media part is, read from its own bytes: image size, PDF pages, audio duration.

Providers bill media by size, pages or duration, never by the length of the base64 that carries
it (a 400 KB PDF is ~133k tokens of base64 text but a few pages). Normalization reads those
facts here, once, from the header of the inline data (PNG, JPEG, GIF and WebP headers; a PDF's
page objects; a WAV header), without an imaging library: each format needs a few bytes at a
known place. What cannot be read (a URL, a file id, an unknown format) stays ``None`` and the
counter charges its documented default.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib
from collections.abc import Mapping
from typing import Any

from .record import Image, Media

__all__ = ["add_blob", "image_of", "image_size", "media_of", "pdf_pages", "wav_seconds"]

#: Base64 characters decoded to find an image header (JPEG headers may follow EXIF blocks).
_HEADER_B64 = 96 * 1024
_DATA_URL = re.compile(r"data:([\w.+-]+/[\w.+-]+)?[^,]*?;base64,", re.ASCII)
_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_COUNT = re.compile(
    rb"/Type\s*/Pages\b[^>]{0,512}?/Count\s+(\d+)|/Count\s+(\d+)[^>]{0,512}?/Type\s*/Pages\b"
)
_STREAM = re.compile(rb"stream\r?\n")
#: Bytes a PDF page takes when the page tree cannot be read (fonts plus a dense text page).
PDF_BYTES_PER_PAGE = 50_000
#: Streams inflated to find page objects (object streams of PDF 1.5+ hide them).
_MAX_INFLATE = 32 * 1024 * 1024


def _b64(text: str, limit: int | None = None) -> bytes:
    if limit is not None and len(text) > limit:
        text = text[: limit - limit % 4]
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=False)
    except (binascii.Error, ValueError):
        return b""


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 < len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length field
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2 : at + 4])
        # SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG, JPEG, GIF or WebP header; None for anything else."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            width = int.from_bytes(data[24:27], "little") + 1
            height = int.from_bytes(data[27:30], "little") + 1
            return width, height
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
    return None


def pdf_pages(data: bytes) -> int | None:
    """Pages of a PDF: page objects, else the page tree's ``/Count``, looking inside compressed
    object streams when the plain text shows none; None when neither can be found."""
    if not data.startswith(b"%PDF"):
        return None
    pages = len(_PAGE.findall(data))
    if pages:
        return pages
    counts = [int(a or b) for a, b in _COUNT.findall(data)]
    if counts:
        return max(counts)
    inflated = 0
    for match in _STREAM.finditer(data):
        end = data.find(b"endstream", match.end())
        if end < 0 or inflated > _MAX_INFLATE:
            break
        try:
            chunk = zlib.decompressobj().decompress(data[match.end() : end], _MAX_INFLATE)
        except zlib.error:
            continue
        inflated += len(chunk)
        pages += len(_PAGE.findall(chunk))
    return pages or None


def wav_seconds(data: bytes) -> float | None:
    """Duration of a RIFF/WAVE file from its ``fmt `` byte rate and ``data`` size."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return None
    at, byte_rate = 12, 0
    while at + 8 <= len(data):
        chunk, size = data[at : at + 4], int.from_bytes(data[at + 4 : at + 8], "little")
        if chunk == b"fmt " and at + 16 <= len(data):
            byte_rate = int.from_bytes(data[at + 16 : at + 20], "little")
        elif chunk == b"data":
            size = min(size, len(data) - at - 8)
            return size / byte_rate if byte_rate else None
        at += 8 + size + (size & 1)
    return None


def _dims(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _split_data_url(url: Any) -> tuple[str | None, str] | None:
    if not isinstance(url, str) or not url.startswith("data:"):
        return None
    match = _DATA_URL.match(url)
    return (match.group(1), url[match.end() :]) if match else None


def _inline(part: Mapping[str, Any]) -> tuple[str | None, str | bytes] | None:
    """(mime type, base64 text or raw bytes) of an inline media part, in any provider's shape."""
    for key in ("image_url", "file_data", "url"):
        inner = part.get(key)
        if isinstance(inner, Mapping):
            inner = inner.get("url")
        found = _split_data_url(inner)
        if found is not None:
            return found
    source = part.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        data, mime = source.get("data"), source.get("media_type")
        if isinstance(data, str):
            return (mime if isinstance(mime, str) else None), data
    for key in ("data", "base64"):  # Gemini inline_data, OpenAI input_audio, LangChain blocks
        data = part.get(key)
        if isinstance(data, str | bytes):
            mime = part.get("mime_type", part.get("mimeType"))
            return (mime if isinstance(mime, str) else None), data
    return None


def image_of(part: Mapping[str, Any]) -> Image:
    """An image part: detail and size as given, else the size read from inline data."""
    inner = part.get("image_url")
    src: Mapping[str, Any] = inner if isinstance(inner, Mapping) else part
    detail = src.get("detail", part.get("detail"))
    width = _dims(src.get("width", part.get("width")))
    height = _dims(src.get("height", part.get("height")))
    if width is None or height is None:
        inline = _inline(part)
        if inline is not None:
            data = inline[1]
            raw = data[:_HEADER_B64] if isinstance(data, bytes) else _b64(data, _HEADER_B64)
            size = image_size(raw)
            if size is None and isinstance(data, str) and len(data) > _HEADER_B64:
                size = image_size(_b64(data))  # a JPEG frame header after large metadata
            if size is not None:
                width, height = size
    return Image(detail if isinstance(detail, str) else None, width, height)


def media_of(part: Mapping[str, Any], kind: str, chars: int) -> Media:
    """A document / audio / video part; ``kind`` is the part's family, ``chars`` its JSON size.

    ``kind`` may be refined by the inline data's mime type (Gemini sends every medium as
    ``inline_data``). Pages and seconds are read from the bytes when they are inline; an audio
    part's ``transcript`` (OpenAI audio replies, Realtime items) is kept.
    """
    inline = _inline(part)
    nested = part.get("input_audio", part.get("file"))  # OpenAI chat nests both
    if inline is None and isinstance(nested, Mapping):
        inline = _inline(nested)
        fmt = nested.get("format")
        if inline is not None and isinstance(fmt, str):
            inline = (f"audio/{fmt}", inline[1])
    mime = inline[0] if inline else None
    if mime is None:
        for key in ("mime_type", "mimeType", "media_type"):
            if isinstance(part.get(key), str):
                mime = part[key]
    if mime:
        family = mime.split("/", 1)[0]
        kind = {"audio": "audio", "video": "video"}.get(family, kind)
    transcript = part.get("transcript")
    if not isinstance(transcript, str) and isinstance(nested, Mapping):
        transcript = nested.get("transcript")
    transcript = transcript if isinstance(transcript, str) and kind == "audio" else ""
    if inline is None:
        return Media(kind, mime, chars=chars, transcript=transcript)
    data = inline[1]
    raw = data if isinstance(data, bytes) else _b64(data)
    pages = pdf_pages(raw) if kind == "document" else None
    if kind == "document" and pages is None and raw:
        pages = -(-len(raw) // PDF_BYTES_PER_PAGE)
    seconds = wav_seconds(raw) if kind == "audio" else None
    return Media(kind, mime, pages, seconds, len(raw), chars, transcript)


def add_blob(
    images: list[Image], media: list[Media], mime: Any, data: Any, kind: str = "document"
) -> None:
    """A part given as a mime type and its data (bytes, base64, or None for a URL or a stored
    file), as Gemini, Bedrock and pydantic-ai give them: an image when ``kind`` says so or its
    mime type is ``image/*``, else a ``kind`` medium. Priced as such (size, pages, seconds read
    from inline bytes), never as the text of its bytes; no JSON form, so ``chars`` is 0."""
    blob: dict[str, Any] = {}
    if isinstance(mime, str):
        blob["mime_type"] = mime
    if isinstance(data, bytes | str):
        blob["data"] = data
    if kind == "image" or (isinstance(mime, str) and mime.startswith("image/")):
        images.append(image_of(blob))
    else:
        media.append(media_of(blob, kind, 0))
