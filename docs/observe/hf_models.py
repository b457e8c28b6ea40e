"""Judge program for docs/observe.md (needs `transformers`; not used by the tests): a few transformers models built
from small configs, each compiled with torch.compile (inductor, CPU) and called as a user would: a training step,
then generation-like calls with growing sequence lengths. `python3 hf_models.py [gpt2 bert llama ...]`."""
import sys

import torch
import transformers as tf

CONFIGS = {
    "gpt2": lambda: tf.GPT2LMHeadModel(tf.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=128)),
    "bert": lambda: tf.BertForMaskedLM(tf.BertConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                                     intermediate_size=128, vocab_size=512)),
    "llama": lambda: tf.LlamaForCausalLM(tf.LlamaConfig(num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
                                                        num_key_value_heads=2, intermediate_size=128,
                                                        vocab_size=512)),
}


def exercise(name):
    torch.manual_seed(0)
    model = CONFIGS[name]()
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(2):  # training steps
        ids = torch.randint(0, 512, (2, 16))
        loss = compiled(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    with torch.no_grad():
        for length in (8, 9, 10):  # growing inputs, as a generation loop without a cache makes them
            compiled(input_ids=torch.randint(0, 512, (1, length)))
    print(name, "ok", round(loss.item(), 3))


for name in sys.argv[1:] or list(CONFIGS):
    exercise(name)
