# Report: https://github.com/pytorch/pytorch/issues/173915
# What went wrong: Qwen3-VL's `get_rope_index` reads token counts out of tensors (`.item()`, `.tolist()`)
# and branches on them; torch.compile graph-breaks and torch.export fails with a data-dependent error.
# Reporter's shape: a method of the model, called from its forward, with `input_ids` / `image_grid_thw`
# tensors, `.tolist()`, `.item()` and Python loops over the values; the model is compiled.
import torch
from torch import nn


class VisionLanguageModel(nn.Module):
    def __init__(self, vocab=64, dim=16, image_token_id=5, vision_start_token_id=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.image_token_id = image_token_id
        self.vision_start_token_id = vision_start_token_id

    def get_rope_index(self, input_ids, image_grid_thw=None, attention_mask=None):
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        if image_grid_thw is None:
            pos = attention_mask.cumsum(-1) - 1
            pos.masked_fill_(attention_mask == 0, 0)
            return pos.unsqueeze(0).expand(3, -1, -1)
        position_ids = torch.zeros(3, *input_ids.shape, dtype=torch.long)
        for i, ids in enumerate(input_ids):
            tokens = ids.tolist()  # expect: TL302
            starts = [j for j, tok in enumerate(tokens) if tok == self.vision_start_token_id]
            image_nums = (ids == self.image_token_id).sum().item()  # expect: TL302
            if image_nums == 0 or not starts:
                position_ids[:, i] = torch.arange(len(tokens))
                continue
            t, h, w = image_grid_thw[0].tolist()  # expect: TL302
            grid = torch.arange(t * h * w).view(1, -1).expand(3, -1)
            span = min(grid.shape[1], len(tokens))
            position_ids[:, i, :span] = grid[:, :span]
        return position_ids

    def forward(self, input_ids, image_grid_thw=None):
        position_ids = self.get_rope_index(input_ids, image_grid_thw)
        return self.embed(input_ids) + position_ids[0].unsqueeze(-1)


if __name__ == "__main__":
    model = torch.compile(VisionLanguageModel())
    ids = torch.tensor([[1, 4, 5, 5, 5, 5, 2]])
    model(ids, torch.tensor([[1, 2, 2]]))
