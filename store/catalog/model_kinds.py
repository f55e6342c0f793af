"""What a model is for: a chat model (what a turn calls), an image model (what GenerateImage
calls) or something else a provider lists (embeddings, speech, transcription, moderation, …).
A provider's own metadata decides where discovery finds it (``console.discovery``); otherwise,
and for a model added by hand, the model id's name decides here."""

from __future__ import annotations

import re

CHAT = "chat"
IMAGE = "image"
EMBEDDING = "embedding"
SPEECH = "speech"
TRANSCRIPTION = "transcription"
MODERATION = "moderation"
OTHER = "other"  # listed, but for none of the above (video, rerank, realtime, completions only)
# Every kind a model may be saved with, chat first.
KINDS = (CHAT, IMAGE, EMBEDDING, SPEECH, TRANSCRIPTION, MODERATION, OTHER)

# Name patterns, first match wins; a name matching none is a chat model. Matched against the
# id without an owner prefix (``openai/``, ``models/``, ``BAAI/``), case ignored. This is the
# one statement of the name rule; the docs refer to it (docs/limits.md, "What a model is for").
_BY_NAME = (
    # Rerankers first: ``bge-reranker-*`` is not an embedding model.
    (OTHER, re.compile(r"rerank")),
    (
        IMAGE,
        re.compile(
            r"^(gpt-image|chatgpt-image|dall-e|imagen)|^gemini-.*-image|flux|stable-diffusion|sdxl"
        ),
    ),
    # ``embed`` covers text-embedding-*, nomic-embed-*, mxbai-embed-*; BAAI's bge-* and
    # intfloat's (multilingual-)e5-* do not say it.
    (EMBEDDING, re.compile(r"embed|^bge-|(^|-)e5(-|$)")),
    # OpenAI's audio chat models (gpt-4o-audio-preview, gpt-audio) are speech: they exist to
    # speak and listen, while a Cursor turn is text and tools.
    (SPEECH, re.compile(r"(^|-)tts(-|$)|^gpt-4o-mini-tts|(^|-)audio(-|$)")),
    (TRANSCRIPTION, re.compile(r"whisper|transcribe")),
    (MODERATION, re.compile(r"moderation")),
    # Completions only (no chat endpoint): gpt-3.5-turbo-instruct, davinci-002, babbage-002.
    (
        OTHER,
        re.compile(
            r"^(sora|veo|lyria)|realtime|^(davinci|babbage)-002$|^gpt-3\.5-turbo-instruct|^aqa$"
        ),
    ),
)


def kind_by_name(model_id: str) -> str:
    """The kind a model id's name says (chat when it says nothing else)."""
    name = model_id.strip().lower().rsplit("/", 1)[-1]
    for kind, pattern in _BY_NAME:
        if pattern.search(name):
            return kind
    return CHAT


def is_chat(kind: str) -> bool:
    """Whether a turn can run on a model of this kind (so discovery ticks it)."""
    return kind == CHAT


def generates_images(kind: str) -> bool:
    """Whether a model of this kind can be the image model."""
    return kind == IMAGE
