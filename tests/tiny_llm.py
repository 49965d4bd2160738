"""A tiny chat LLM for tests, built from nothing in seconds on a CPU, and a local OpenAI-compatible
server in front of it.

The model is a GPT-2 (two layers, 64 dimensions) with a word-level tokenizer and a chat template,
trained until it answers the prompts biaseval's openai backend sends for ``PAIRS`` (its default
system prompt, English to Spanish) with their translations. Trained rather than random, so that a
reply that went to the wrong text would show. ``serve`` answers ``POST /v1/chat/completions`` with a
few lines of ``http.server`` around ``answer`` (greedy), in the shape the ``openai`` SDK reads.
Offline (CPU, fixed seed).

Correct by construction, on any processor: how a training run goes follows the CPU's floating-point
kernels (AVX-512 or AVX2, threads), so "N steps, then stop" learnt the pairs on one machine and not
on another (it answered ``carpintero`` for ``enfermero`` on an AMD EPYC without AVX-512). Training
therefore stops only when ``answer`` — the very function the server calls — gives every reply exactly,
each word chosen by a margin of at least ``MARGIN`` over the next best (so no rounding difference
can flip it), checked again on the model as saved; it fails, naming the replies, if ``max_steps``
are not enough. The optimiser is tamed (a small learning rate, clipped gradients) so that training
converges in a few hundred steps whatever the kernels, instead of bouncing off a plateau.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

from fakes.local_http import POLL_S

PAIRS: list[tuple[str, str]] = [
    ("I've known her for a long time, my friend works as a nurse.",
     "La conozco desde hace mucho tiempo, mi amiga trabaja como enfermera."),
    ("I've known him for a long time, my friend works as a nurse.",
     "Lo conozco desde hace mucho tiempo, mi amigo trabaja como enfermero."),
    ("I've known her for a long time, my friend works as a carpenter.",
     "La conozco desde hace mucho tiempo, mi amiga trabaja como carpintera."),
    ("I've known him for a long time, my friend works as a carpenter.",
     "Lo conozco desde hace mucho tiempo, mi amigo trabaja como carpintero."),
]
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
SPECIAL = ["[UNK]", "[PAD]", "<eos>", "<|system|>", "<|user|>", "<|assistant|>"]


# Every word of every reply chosen by at least this much (in logits: the log of how many times
# likelier it is than the runner-up; e^2 ≈ 7). Floating-point differences between kernels move a
# logit of this model by about 1e-5, so a margin this size cannot be flipped by them.
MARGIN = 2.0
CHECK_EVERY = 25  # training steps between two checks of the replies (a check costs about 3 steps)


def build_tiny_chat_lm(directory: Path, prompts: list[list[dict]], replies: list[str], seed: int = 0,
                       max_steps: int = 2000) -> Path:
    """Train a tiny causal LM to answer each chat (``prompts``: lists of messages) with its reply, until
    ``answer`` gives every reply exactly, by ``MARGIN``; write it with its tokenizer to
    ``directory/model`` and return that path. RuntimeError if ``max_steps`` do not get there."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    def chat(messages: list[dict]) -> str:
        return "".join(f"<|{m['role']}|> {m['content']} " for m in messages) + "<|assistant|>"

    words = sorted({w for text in [chat(p) for p in prompts] + replies for w in text.split()} - set(SPECIAL))
    vocab = {w: i for i, w in enumerate(SPECIAL + words)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", eos_token="<eos>")
    tokenizer.chat_template = CHAT_TEMPLATE

    torch.manual_seed(seed)
    sequences, answers = [], []
    for messages, reply in zip(prompts, replies):
        prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        assert prompt == chat(messages)
        prompt_ids = tokenizer(prompt)["input_ids"]
        reply_ids = tokenizer(reply)["input_ids"] + [tokenizer.eos_token_id]
        assert tokenizer.decode(reply_ids, skip_special_tokens=True) == reply, f"{reply!r} does not survive tokenizing"
        sequences.append(prompt_ids + reply_ids)
        answers.append(len(prompt_ids))
    length = max(map(len, sequences))
    pad = tokenizer.pad_token_id
    ids = torch.tensor([s + [pad] * (length - len(s)) for s in sequences])
    labels = ids.clone()
    for row, (start, seq) in enumerate(zip(answers, sequences)):
        labels[row, :start] = -100  # learn the replies only
        labels[row, len(seq):] = -100
    mask = (torch.arange(length)[None, :] < torch.tensor([len(s) for s in sequences])[:, None]).long()
    config = GPT2Config(vocab_size=len(vocab), n_positions=max(128, length + 64), n_embd=64, n_layer=2, n_head=2,
                        bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                        pad_token_id=pad, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config)
    # lr 3e-3 without clipping bounced off a plateau where "him ... nurse" and "him ... carpenter" got
    # the same answer, and whether it escaped depended on the kernels; 1e-3 with clipping converges
    # smoothly in 150-250 steps (seeds 0-3, 1 or 2 threads, AVX2 or ATEN_CPU_CAPABILITY=default)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    # one thread: as fast for a model this small, the same on any number of cores, and not slowed
    # tenfold by a thread pool waiting for cores that other work holds (seen: 30 s became 500 s)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        wrong = misses(model, tokenizer, prompts, replies)
        step = 0
        while wrong and step < max_steps:
            model.train()
            for _ in range(CHECK_EVERY):
                loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            step += CHECK_EVERY
            wrong = misses(model, tokenizer, prompts, replies)
    finally:
        torch.set_num_threads(threads)
    out = directory / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if not wrong:  # the model as the server will load it
        wrong = misses(AutoModelForCausalLM.from_pretrained(out, local_files_only=True), tokenizer, prompts, replies)
    if wrong:
        raise RuntimeError(f"the tiny LLM did not learn its replies in {step} steps (seed {seed}; "
                           f"each needs every word by a margin of {MARGIN}):\n" + "\n".join(wrong))
    return out


@dataclass(frozen=True)
class Reply:
    prompt_tokens: int
    tokens: list[int]  # the new ones
    text: str
    margin: float  # the smallest, over the new tokens, by which one was chosen over the next best (logits)


def answer(model, tokenizer, messages: list[dict], max_new_tokens: int = 64) -> Reply:
    """The model's greedy reply to a chat."""
    import torch

    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
    model.eval()
    with torch.no_grad():
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                             do_sample=False, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                             output_scores=True, return_dict_in_generate=True)
    new = out.sequences[0, ids.shape[1]:].tolist()
    margin = min((float(top[0] - top[1]) for top in (s[0].topk(2).values for s in out.scores)), default=0.0)
    return Reply(ids.shape[1], new, tokenizer.decode(new, skip_special_tokens=True), margin)


def misses(model, tokenizer, prompts: list[list[dict]], replies: list[str]) -> list[str]:
    """The replies the model does not give exactly (ending with end-of-sequence), or not by MARGIN."""
    wrong = []
    for messages, reply in zip(prompts, replies):
        got = answer(model, tokenizer, messages)
        if got.text != reply or got.tokens[-1:] != [tokenizer.eos_token_id] or got.margin < MARGIN:
            wrong.append(f"  wanted {reply!r}, got {got.text!r} (smallest margin {got.margin:.3g})")
    return wrong


@contextmanager
def serve(model_dir: Path, served_name: str = "tiny-chat") -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 in front of the model; yields its base URL (…/v1)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    fingerprint = "tiny-" + hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()[:12]
    lock = threading.Lock()  # one generate at a time
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            if self.path != "/v1/chat/completions" or body.get("model") != served_name:
                return self._send(404, {"error": {"message": "not found", "type": "invalid_request_error",
                                                  "code": "model_not_found"}})
            limit = body.get("max_completion_tokens") or body.get("max_tokens") or 64
            with lock:
                reply = answer(model, tokenizer, body["messages"], max_new_tokens=limit)
            finished = reply.tokens[-1:] == [tokenizer.eos_token_id]
            self._send(200, {
                "id": f"chatcmpl-tiny-{len(seen)}", "object": "chat.completion", "created": int(time.time()),
                "model": served_name, "system_fingerprint": fingerprint,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text},
                             "finish_reason": "stop" if finished else "length"}],
                "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": len(reply.tokens),
                          "total_tokens": reply.prompt_tokens + len(reply.tokens)},
            })

        def _send(self, status: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
