"""Integrations of leanattn with inference frameworks, each imported on demand:
``leanattn.integrations.transformers`` (attn_implementation="leanattn")."""
