# Report: https://github.com/tenstorrent/tt-torch/issues/852
# What went wrong: a `logger.warning(...)` in transformers' generation code (_prepare_special_tokens)
# graph-breaks the compiled generate ("Logger not supported for non-export cases").
# Reporter's shape: module-level `logger = logging.getLogger(__name__)`; the warning inside a method of
# the generation mixin reached from a compiled `generate`.
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class TinyLM(nn.Module):
    def __init__(self, vocab=32, dim=16, eos_token_id=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)
        self.eos_token_id = eos_token_id

    def _prepare_special_tokens(self, pad_token_id):
        if pad_token_id is None:
            pad_token_tensor = torch.tensor(self.eos_token_id)
            logger.warning(f"Setting `pad_token_id` to `eos_token_id`:{pad_token_tensor} for open-end generation.")  # expect: TL204
            return pad_token_tensor
        return torch.tensor(pad_token_id)

    def forward(self, input_ids):
        return self.head(self.embed(input_ids))

    def generate(self, input_ids, max_new_tokens=4, pad_token_id=None):
        pad = self._prepare_special_tokens(pad_token_id)
        for _ in range(max_new_tokens):
            logits = self(input_ids)[:, -1]
            next_ids = logits.argmax(-1, keepdim=True)
            input_ids = torch.cat([input_ids, next_ids], dim=1)
        return input_ids, pad


if __name__ == "__main__":
    model = TinyLM()
    generate = torch.compile(model.generate)
    generate(torch.tensor([[3, 4, 5]]))
