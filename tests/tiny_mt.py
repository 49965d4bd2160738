"""A tiny English->Spanish Marian model for tests, built from nothing in a few seconds on a CPU.

A SentencePiece model trained on a handful of sentences, a Marian tokenizer around it, and a
Marian model (d_model 32, one layer each side) trained until it knows ``PAIRS`` by heart. Trained
rather than random, because a random model of this size ignores its input and emits the same
garbage for every text, which would hide a scrambled output order. Runs offline (fixed seed, CPU).

Correct by construction, on any processor: a fixed number of steps learns the pairs with one CPU's
floating-point kernels and not with another's, so training goes on until ``misses`` finds every
pair translated exactly, by greedy search with each token ahead of the next best by ``MARGIN`` (so
that padding in a batch, beam search or CTranslate2's own kernels cannot turn it) and by beam
search; it fails naming the pairs if ``max_steps`` are not enough.
"""

from __future__ import annotations

import json
from pathlib import Path

PAIRS: list[tuple[str, str]] = [
    ("The doctor finished her shift.", "La doctora terminó su turno."),
    ("The nurse said he was tired.", "El enfermero dijo que estaba cansado."),
    ("My friend is a teacher.", "Mi amiga es profesora."),
    ("The engineer asked the baker for bread.", "El ingeniero pidió pan al panadero."),
    ("Hello.", "Hola."),
    ("The lawyer and the secretary talked about the long report yesterday.",
     "El abogado y la secretaria hablaron ayer del informe largo."),
]


# each token of each translation chosen by at least this much, in logits (see tiny_llm.MARGIN)
MARGIN = 2.0
CHECK_EVERY = 25  # training steps between two checks


def misses(model, tokenizer) -> list[str]:
    """The pairs the model does not translate exactly: by greedy search, each token by MARGIN, and by
    beam search (4 beams)."""
    import torch

    model.eval()
    wrong = []
    with torch.no_grad():
        for source, target in PAIRS:
            inputs = tokenizer([source], return_tensors="pt")
            greedy = model.generate(**inputs, num_beams=1, do_sample=False, output_scores=True,
                                    return_dict_in_generate=True)
            text = tokenizer.decode(greedy.sequences[0], skip_special_tokens=True)
            margin = min(float(top[0] - top[1]) for top in (s[0].topk(2).values for s in greedy.scores))
            beam = tokenizer.decode(model.generate(**inputs, num_beams=4, do_sample=False)[0], skip_special_tokens=True)
            if text != target or beam != target or margin < MARGIN:
                wrong.append(f"  wanted {target!r}, got {text!r} (greedy, smallest margin {margin:.3g}), "
                             f"{beam!r} (4 beams)")
    return wrong


def build_tiny_marian(directory: Path, seed: int = 0, max_steps: int = 2000) -> Path:
    """Write a trained tiny Marian model and its tokenizer to ``directory/model``; return that path."""
    import sentencepiece as spm
    import torch
    from transformers import MarianConfig, MarianMTModel, MarianTokenizer

    directory.mkdir(parents=True, exist_ok=True)
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(s for pair in PAIRS for s in pair) + "\n", encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(directory / "sp"), vocab_size=80, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, unk_id=0, eos_id=1, bos_id=-1, pad_id=-1,
        num_threads=1, minloglevel=2)
    sp = spm.SentencePieceProcessor(model_file=str(directory / "sp.model"))
    # Marian's layout: </s> 0, <unk> 1, the pieces, <pad> last (the decoder start token)
    vocab = {"</s>": 0, "<unk>": 1}
    for i in range(sp.get_piece_size()):
        vocab.setdefault(sp.id_to_piece(i), len(vocab))
    vocab["<pad>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    tokenizer = MarianTokenizer(source_spm=str(directory / "sp.model"), target_spm=str(directory / "sp.model"),
                                vocab=str(directory / "vocab.json"), source_lang="en", target_lang="es")

    pad = vocab["<pad>"]
    config = MarianConfig(
        vocab_size=len(vocab), d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
        pad_token_id=pad, eos_token_id=0, decoder_start_token_id=pad, forced_eos_token_id=0,
        dropout=0.0, attention_dropout=0.0, activation_dropout=0.0)
    torch.manual_seed(seed)
    model = MarianMTModel(config)
    batch = tokenizer([s for s, _ in PAIRS], text_target=[t for _, t in PAIRS], return_tensors="pt", padding=True)
    labels = batch["labels"].masked_fill(batch["labels"] == pad, -100)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    embeddings = model.get_input_embeddings().weight  # shared by encoder, decoder and output layer
    # like the published opus-mt models: never generate <pad>
    model.generation_config.bad_words_ids = [[pad]]
    model.generation_config.max_length = 64
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as fast for a model this small, and not at the mercy of a loaded machine
    try:
        wrong, step = ["(not checked yet)"], 0
        while wrong and step < max_steps:
            model.train()
            for _ in range(CHECK_EVERY):
                # <pad> starts the decoder; its embedding stays zero, as in the published models
                # (CTranslate2 relies on it: its Marian decoder starts from a zero vector)
                with torch.no_grad():
                    embeddings[pad].zero_()
                loss = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=labels).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            step += CHECK_EVERY
            with torch.no_grad():
                embeddings[pad].zero_()
            wrong = misses(model, tokenizer)
    finally:
        torch.set_num_threads(threads)
    model.eval()
    out = directory / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if not wrong:  # the model as the backends will load it
        wrong = misses(MarianMTModel.from_pretrained(out, local_files_only=True), tokenizer)
    if wrong:
        raise RuntimeError(f"the tiny Marian model did not learn its pairs in {step} steps (seed {seed}; each "
                           f"needs every token by a margin of {MARGIN}):\n" + "\n".join(wrong))
    return out


TOKENIZER_FILES = ["source.spm", "target.spm", "vocab.json", "tokenizer.json", "tokenizer_config.json"]


def convert_to_ct2(model_dir: Path, output_dir: Path, with_tokenizer: bool = True) -> Path:
    """The model converted to CTranslate2 (float32), with its tokenizer files copied in if asked."""
    from ctranslate2.converters import TransformersConverter

    copy = [f for f in TOKENIZER_FILES if (model_dir / f).is_file()] if with_tokenizer else None
    return Path(TransformersConverter(str(model_dir), copy_files=copy).convert(str(output_dir), force=True))


def build_tiny_nllb(directory: Path, seed: int = 0) -> Path:
    """A random NLLB-style model (M2M-100 architecture, NLLB tokenizer with the FLORES-200 language
    tokens and a character vocabulary) in ``directory/model``. Untrained: for checking language tags
    and the agreement of the two backends token by token, not for translations."""
    import string

    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration, NllbTokenizer

    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for piece in ["▁", *string.ascii_lowercase, *string.ascii_uppercase, "."]:
        vocab.setdefault(piece, len(vocab))
    tokenizer = NllbTokenizer(vocab=vocab, merges=[])  # the language codes are added after the vocabulary
    config = M2M100Config(
        vocab_size=len(tokenizer), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64, init_std=0.5,
        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, dropout=0.0)
    torch.manual_seed(seed)
    model = M2M100ForConditionalGeneration(config).eval()
    with torch.no_grad():  # shrink the language tokens' (tied) output rows, so that text gets generated
        model.get_input_embeddings().weight[len(vocab):] *= 0.01
    out = directory / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
