"""A tiny chat LLM for tests, built from nothing in seconds on a CPU, and a local OpenAI-compatible
server in front of it.

The model is a GPT-2 (two layers, 64 dimensions) with a word-level tokenizer and a chat template,
trained for a few hundred steps until it answers the prompts biaseval's openai backend sends for
``PAIRS`` (its default system prompt, English to Spanish) with their translations. Trained rather
than random, so that a reply that went to the wrong text would show. ``serve`` answers ``POST
/v1/chat/completions`` with a few lines of ``http.server`` around ``generate`` (greedy), in the
shape the ``openai`` SDK reads. Offline and deterministic (fixed seed, CPU).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

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


def build_tiny_chat_lm(directory: Path, prompts: list[list[dict]], replies: list[str], seed: int = 0,
                       max_steps: int = 600) -> Path:
    """Train a tiny causal LM to answer each chat (``prompts``: lists of messages) with its reply; write
    it with its tokenizer to ``directory/model`` and return that path."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

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
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(max_steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        if loss.item() < 0.005:
            break
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    out = directory / "model"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@contextmanager
def serve(model_dir: Path, served_name: str = "tiny-chat") -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 in front of the model; yields its base URL (…/v1)."""
    import torch
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
            prompt = tokenizer.apply_chat_template(body["messages"], add_generation_prompt=True, tokenize=False)
            ids = tokenizer(prompt, return_tensors="pt")["input_ids"]
            limit = body.get("max_completion_tokens") or body.get("max_tokens") or 64
            with lock, torch.no_grad():
                out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=limit, do_sample=False,
                                     eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
            new = out[0, ids.shape[1]:].tolist()
            finished = bool(new) and new[-1] == tokenizer.eos_token_id
            text = tokenizer.decode(new, skip_special_tokens=True)
            self._send(200, {
                "id": f"chatcmpl-tiny-{len(seen)}", "object": "chat.completion", "created": int(time.time()),
                "model": served_name, "system_fingerprint": fingerprint,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop" if finished else "length"}],
                "usage": {"prompt_tokens": ids.shape[1], "completion_tokens": len(new),
                          "total_tokens": ids.shape[1] + len(new)},
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
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
