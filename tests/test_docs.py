"""The reference documentation in docs/ names everything users can configure or call.

Everything is read from the code at test time (registries, the factory's
default config, the typer app, the pretraining defaults), so a new
architecture, argument, setting, command or option without documentation
makes this test fail. A name counts as documented when it appears as inline
code (`name`) in the right page, and for per-item checks in that item's
section of the page.
"""
import inspect
import re
from pathlib import Path
from typing import Dict, List

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = [
    "README.md", "component.md", "extensions.md", "architectures.md", "cli.md", "pretraining.md", "project.md",
    "python-api.md", "internals.md",
]
PREFIX = "spacy-elmo."


def read(page: str) -> str:
    path = DOCS / page
    assert path.is_file(), f"missing documentation page docs/{page}"
    return path.read_text(encoding="utf-8")


def strip_code_blocks(text: str) -> str:
    """The text without fenced code blocks (their '#' lines are not headings)."""
    return re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.M | re.S)


def sections(text: str, level: int) -> Dict[str, str]:
    """Heading text of each level-`level` heading -> the text under it, up to the
    next heading of the same or a higher level (subsections included)."""
    text = strip_code_blocks(text)
    matches = list(re.finditer(rf"^(#{{1,{level}}}) (.+)$", text, re.M))
    found: Dict[str, str] = {}
    for i, match in enumerate(matches):
        if len(match.group(1)) != level:
            continue
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        found[match.group(2).strip()] = text[match.end() : end]
    return found


def in_code(name: str, text: str) -> bool:
    """`name` appears as inline code, exactly: `name`."""
    return re.search(r"`" + re.escape(name) + r"`", text) is not None


def section_for(name: str, page_sections: Dict[str, str]) -> str:
    """The section whose heading is the name (backticks ignored), or whose first word is it."""
    for heading, body in page_sections.items():
        clean = heading.replace("`", "").strip()
        if clean == name or clean.split()[0] == name:
            return body
    return ""


def missing_report(missing: List[str], page: str) -> str:
    return f"undocumented in docs/{page}:\n  " + "\n  ".join(missing)


# -- pages and links ---------------------------------------------------------------


def github_slug(heading: str) -> str:
    text = heading.replace("\\_", "_").replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: str) -> set:
    seen: Dict[str, int] = {}
    result = set()
    for match in re.finditer(r"^#{1,6} (.+)$", strip_code_blocks(read(page)), re.M):
        slug = github_slug(match.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(f"{slug}-{n}" if n else slug)
    return result


def test_index_links_every_page():
    index = read("README.md")
    for page in PAGES[1:]:
        assert f"({page})" in index, f"docs/README.md does not link {page}"
    unlisted = sorted(p.name for p in DOCS.glob("*.md") if p.name not in PAGES)
    for page in unlisted:
        assert f"({page})" in index, f"docs/README.md does not link {page}"


def test_links_between_pages_resolve():
    broken = []
    for page in sorted(p.name for p in DOCS.glob("*.md")):
        text = strip_code_blocks(read(page))
        for link in re.findall(r"\]\(([^)\s]*)\)", text):
            if re.match(r"[a-z]+://", link):
                continue
            target, _, anchor = link.partition("#")
            target_page = target or page
            if not (DOCS / target_page).is_file():
                broken.append(f"{page}: link to missing page {target_page}")
            elif anchor and anchor not in anchors(target_page):
                broken.append(f"{page}: link to missing anchor {target_page}#{anchor}")
    assert not broken, "\n".join(broken)


# -- registered functions ------------------------------------------------------------


def registered_functions():
    import spacy_elmo.layers  # noqa: F401  (registers the functions)
    from spacy.util import registry

    found = {}
    for reg in (registry.architectures, registry.layers, registry.model_loaders, registry.tokenizers):
        for name, func in reg.get_all().items():
            if name.startswith(PREFIX):
                found[name] = func
    return found


def test_registered_functions_exist():
    names = set(registered_functions())
    for name in ("ElmoBiLM", "ElmoListener", "ElmoTok2Vec", "ScalarMix", "ElmoStandalone", "EmbeddedLoader",
                 "PublishedLoader", "NativeLoader", "SourceLoader", "TreebankTokenizer"):
        name = f"{PREFIX}{name}.v1"
        assert name in names


def test_every_registered_function_and_argument_is_documented():
    page = read("architectures.md")
    page_sections = sections(page, 2)
    missing = []
    for name, func in sorted(registered_functions().items()):
        section = section_for(name, page_sections)
        if not section:
            missing.append(f"{name} (no '## {name}' section)")
            continue
        for param in inspect.signature(func).parameters:
            if not in_code(param, section):
                missing.append(f"{name}: argument `{param}`")
    from spacy_elmo.pipeline.treebank_tokenizer import TreebankTokenizer

    tokenizer_section = section_for(f"{PREFIX}TreebankTokenizer.v1", page_sections)
    for param in list(inspect.signature(TreebankTokenizer.initialize).parameters)[2:]:
        if param != "nlp" and not in_code(param, tokenizer_section):
            missing.append(f"[initialize.tokenizer] `{param}`")
    assert not missing, missing_report(missing, "architectures.md")


# -- the component ---------------------------------------------------------------------


def elmo_default_config():
    import spacy_elmo.pipeline  # noqa: F401  (registers the factory)
    from spacy.language import Language

    return Language.get_factory_meta("elmo").default_config


def test_every_component_setting_is_documented():
    config = elmo_default_config()
    page = read("component.md")
    missing = [f"[components.elmo] `{key}`" for key in config if not in_code(key, page)]
    model = config["model"]
    missing += [f"[components.elmo.model] `{key}`" for key in model if not in_code(key, page)]
    assert not missing, missing_report(missing, "component.md")


def test_component_documents_the_initialize_weights_block():
    page = read("component.md")
    assert "[initialize.components.elmo]" in page and in_code("weights", page)
    methods = ("predict", "set_annotations", "update", "initialize", "to_disk", "from_disk", "to_bytes", "from_bytes")
    for method in methods:
        assert in_code(method, page) or f"Elmo.{method}" in page, f"component.md: method {method}"


# -- extension attributes ------------------------------------------------------------------

EXTENSIONS = [
    ("Doc", "doc", "elmo"),
    ("Token", "token", "elmo"),
    ("Span", "span", "elmo"),
    ("Doc", "doc", "elmo_vector"),
    ("Token", "token", "elmo_vector"),
    ("Span", "span", "elmo_vector"),
]


@pytest.mark.parametrize("cls_name,var,attr", EXTENSIONS)
def test_extension_is_registered_and_documented(cls_name, var, attr):
    import spacy_elmo.pipeline  # noqa: F401  (registers the extensions)
    from spacy import tokens

    assert getattr(tokens, cls_name).has_extension(attr), f"{cls_name}._.{attr} is not registered"
    assert in_code(f"{var}._.{attr}", read("extensions.md")), f"docs/extensions.md does not document {var}._.{attr}"


# -- command line ------------------------------------------------------------------------------


def cli_commands():
    import typer
    from typer.main import get_command_name

    from spacy_elmo.cli import app

    group = typer.main.get_command(app)
    names = []
    for info in app.registered_commands:
        names.append(info.name or get_command_name(info.callback.__name__))
    return names, group


def test_every_command_and_option_is_documented():
    # typer may vendor its own click, so parameters are told apart by
    # `param_type_name` rather than by isinstance checks against click's classes
    names, group = cli_commands()
    assert names, "no commands registered on spacy_elmo.cli.app"
    commands = getattr(group, "commands", None) or {names[0]: group}
    page = read("cli.md")
    page_sections = sections(page, 2)
    missing = []
    checked = 0
    for name in names:
        section = section_for(name, page_sections)
        if not section:
            missing.append(f"command {name} (no '## {name}' section)")
            continue
        assert name in commands, f"command {name} is registered but not built by typer"
        for param in commands[name].params:
            checked += 1
            if param.param_type_name == "option":
                flags = list(param.opts) + list(param.secondary_opts)
                if getattr(param, "hidden", False) or flags == ["--help"]:
                    continue
                missing += [f"{name}: option `{flag}`" for flag in flags if not in_code(flag, section)]
            elif param.param_type_name == "argument":
                if not in_code(param.name, section):
                    missing.append(f"{name}: argument `{param.name}`")
    assert checked, "no command parameters were found to check"
    assert not missing, missing_report(missing, "cli.md")


# -- pretraining config -------------------------------------------------------------------------


def test_every_pretraining_setting_is_documented():
    from spacy_elmo.pretrain.settings import DEFAULT_CONFIG

    page = read("pretraining.md")
    page_sections = sections(page, 3)
    missing = []
    for section_name, values in DEFAULT_CONFIG.items():
        section = section_for(f"[{section_name}]", page_sections)
        if not section:
            missing.append(f"[{section_name}] (no '### [{section_name}]' section)")
            continue
        missing += [f"[{section_name}] `{key}`" for key in values if not in_code(key, section)]
    assert not missing, missing_report(missing, "pretraining.md")


# -- Python API ------------------------------------------------------------------------------------


def test_every_top_level_name_is_documented():
    import spacy_elmo

    page = read("python-api.md")
    missing = [
        name for name in spacy_elmo.__all__ if not (in_code(name, page) or in_code(f"spacy_elmo.{name}", page))
    ]
    assert not missing, missing_report(missing, "python-api.md")


# -- spacy project -----------------------------------------------------------------------------


def test_every_project_variable_and_command_is_documented():
    import srsly

    project = srsly.read_yaml(DOCS.parent / "project.yml")
    page = read("project.md")
    names = list(project["vars"]) + [command["name"] for command in project["commands"]] + list(project["workflows"])
    missing = [name for name in names if not in_code(name, page)]
    assert not missing, missing_report(missing, "project.md")


# -- the project's scripts -----------------------------------------------------------------------

SCRIPTS = DOCS.parent / "scripts"
SCRIPT_PAGES = ["project.md", "pretraining.md"]


class _ParserCaptured(Exception):
    """Raised in place of parsing, so that a script's main() stops once its parser is built."""


def script_parser(path: Path):
    """The argparse parser scripts/NAME.py's main() builds, taken where it would parse (nothing runs)."""
    import argparse
    import importlib.util
    import sys

    seen: list = []

    def capture(self, args=None, namespace=None):
        seen.append(self)
        raise _ParserCaptured

    sys.path.insert(0, str(path.parent))  # scripts import each other (adapt.py reads pretrain.py)
    original, argv = argparse.ArgumentParser.parse_known_args, sys.argv
    argparse.ArgumentParser.parse_known_args = capture  # type: ignore[method-assign]
    sys.argv = [str(path)]
    try:
        spec = importlib.util.spec_from_file_location(f"_docs_script_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        with pytest.raises(_ParserCaptured):
            module.main()
    finally:
        argparse.ArgumentParser.parse_known_args = original  # type: ignore[method-assign]
        sys.argv = argv
        sys.path.remove(str(path.parent))
    return seen[0]


def script_section(name: str) -> str:
    """The level-3 sections of the script pages whose heading names scripts/NAME.py, joined."""
    found = []
    for page in SCRIPT_PAGES:
        found += [body for heading, body in sections(read(page), 3).items() if f"scripts/{name}.py" in heading]
    return "\n".join(found)


def undocumented_arguments(parser, section: str, step: str = "") -> List[str]:
    """Each option flag and positional argument of `parser` the section does not name in inline code;
    a subcommand's as `STEP --flag` and `STEP ... POSITIONAL`."""
    import argparse

    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                if not in_code(sub, section) and not re.search(rf"`{re.escape(sub)}[ `]", section):
                    missing.append(f"step `{sub}`")
                missing += undocumented_arguments(subparser, section, sub)
            continue
        prefix = f"{step} " if step else ""
        if action.option_strings:
            missing += [f"`{prefix}{flag}`" for flag in action.option_strings
                        if flag.startswith("--") and not in_code(prefix + flag, section)]
        elif step:
            if not re.search(rf"`{re.escape(step)}[^`]*\b{action.dest.upper()}\b[^`]*`", section):
                missing.append(f"`{step} {action.dest.upper()}`")
        elif not in_code(action.dest, section):
            missing.append(f"`{action.dest}`")
    return missing


@pytest.mark.parametrize("name", sorted(p.stem for p in SCRIPTS.glob("*.py")))
def test_every_script_argument_and_option_is_documented(name):
    section = script_section(name)
    assert section, f"scripts/{name}.py has no '### ... scripts/{name}.py' section in docs/ ({SCRIPT_PAGES})"
    parser = script_parser(SCRIPTS / f"{name}.py")
    assert parser._actions, f"scripts/{name}.py: no argument parser was found"
    missing = undocumented_arguments(parser, section)
    assert not missing, missing_report([f"scripts/{name}.py: {m}" for m in missing], " or ".join(SCRIPT_PAGES))


def test_the_script_check_sees_an_undocumented_option():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("output")
    parser.add_argument("--seen")
    parser.add_argument("--unseen")
    assert undocumented_arguments(parser, "| `output` | `--seen` |") == ["`--unseen`"]
