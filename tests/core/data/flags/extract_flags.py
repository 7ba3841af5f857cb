#!/usr/bin/env python3
"""Writes the flag lists of tests/core/data/flags/ from framework sources (a git mirror).

Usage: extract_flags.py megatron-lm  MEGATRON_LM_GIT_DIR TAG > megatron-lm-core-X.txt
       extract_flags.py torchtitan   TORCHTITAN_GIT_DIR  TAG > torchtitan-X.txt
       extract_flags.py megatron-bridge BRIDGE_GIT_DIR TAG > megatron-bridge-X.txt

Megatron-LM: every '--flag' string literal of megatron/training/arguments.py (argparse
add_argument names and aliases), plus the flags ArgumentGroupFactory generates from dataclass
fields (megatron/training/argument_utils.py: '--' + field name with '-' for '_'; store_false
booleans as '--no-x' and '--disable-x'; 'arg_names' metadata literals), for the classes named
in arguments.py (core 0.16 and later).
torchtitan: tyro flags of torchtitan/config/job_config.py dataclasses ('--section.field', with
'_' and '-' spellings, '--section.no_field' for booleans).
Megatron-Bridge: scripts/training/run_recipe.py argparse flags (the rest are key=value
overrides). A superset is possible (a literal that names no flag); a flag missing is not.
"""
import re
import subprocess
import sys


def show(git, tag, path):
    return subprocess.run(["git", "--git-dir", git, "show", f"{tag}:{path}"],
                          check=True, capture_output=True, text=True).stdout


def grep_files(git, tag, pattern):
    out = subprocess.run(["git", "--git-dir", git, "grep", "-l", "-E", pattern, tag, "--",
                          "megatron"], capture_output=True, text=True).stdout
    return [line.split(":", 1)[1] for line in out.splitlines()]


LITERAL = re.compile(r"""['"](--[A-Za-z0-9][A-Za-z0-9_.-]*)['"]""")
FIELD = re.compile(r"^    ([a-z_][a-z0-9_]*)\s*:\s*([^=\n]+?)\s*(?:=\s*(.+))?$")


def class_fields(git, tag, cls, seen):
    """Dataclass fields of `cls` and its bases found under megatron/."""
    if cls in seen:
        return []
    seen.add(cls)
    files = grep_files(git, tag, rf"^class {cls}\b")
    fields = []
    for path in files:
        src = show(git, tag, path)
        m = re.search(rf"^class {cls}\b(\(([^)]*)\))?:\n(.*?)(?=^\S|\Z)", src, re.S | re.M)
        if not m:
            continue
        for base in (m.group(2) or "").split(","):
            base = base.strip().split(".")[-1]
            if base and base[0].isupper():
                fields += class_fields(git, tag, base, seen)
        for line in m.group(3).splitlines():
            f = FIELD.match(line)
            if f:
                fields.append((f.group(1), f.group(2).strip(), (f.group(3) or "").strip()))
        fields += [(lit, "literal", "") for lit in LITERAL.findall(m.group(3))]
    return fields


def megatron(git, tag):
    args = show(git, tag, "megatron/training/arguments.py")
    flags = set(LITERAL.findall(args))
    for m in re.finditer(r"ArgumentGroupFactory\((\w+)(?:,\s*exclude\s*=\s*\[([^\]]*)\])?", args):
        exclude = set(re.findall(r"['\"](\w+)['\"]", m.group(2) or ""))
        for name, typ, default in class_fields(git, tag, m.group(1), set()):
            if typ == "literal":
                flags.add(name)
                continue
            if name in exclude or name.startswith("_"):
                continue
            dashed = name.replace("_", "-")
            if typ.startswith("bool") and default.startswith("True"):
                flags.update({"--no-" + dashed, "--disable-" + dashed})
            else:
                flags.add("--" + dashed)
    return flags


def torchtitan(git, tag):
    src = show(git, tag, "torchtitan/config/job_config.py")
    flags = set()
    sections = {}
    for m in re.finditer(r"^class (\w+):\n(.*?)(?=^\S|\Z)", src, re.S | re.M):
        sections[m.group(1)] = m.group(2)
    job = re.search(r"^class JobConfig:\n(.*?)(?=^\S|\Z)", src, re.S | re.M)
    for line in job.group(1).splitlines():
        f = re.match(r"^    (\w+): (\w+) = field", line)
        if not f or f.group(2) not in sections:
            continue
        for fl in sections[f.group(2)].splitlines():
            g = FIELD.match(fl)
            if not g:
                continue
            for spelled in {g.group(1), g.group(1).replace("_", "-")}:
                flags.add(f"--{f.group(1)}.{spelled}")
                if g.group(2).startswith("bool"):
                    flags.add(f"--{f.group(1)}.no_{g.group(1)}")
                    flags.add(f"--{f.group(1)}.no-{g.group(1).replace('_', '-')}")
    return flags


def bridge(git, tag):
    return set(LITERAL.findall(show(git, tag, "scripts/training/run_recipe.py")))


def main():
    kind, git, tag = sys.argv[1:4]
    flags = {"megatron-lm": megatron, "torchtitan": torchtitan, "megatron-bridge": bridge}[kind](
        git, tag)
    commit = subprocess.run(["git", "--git-dir", git, "rev-parse", f"{tag}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    print(f"# {kind} {tag} ({commit}): written by tests/core/data/flags/extract_flags.py")
    for f in sorted(flags):
        print(f)


if __name__ == "__main__":
    main()
