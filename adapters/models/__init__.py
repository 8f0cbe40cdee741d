"""Model loading: the embedded SmolLM2 default and any HF folder or id."""
