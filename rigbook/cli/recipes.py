"""`rigbook recipe …` (one recipe) and `rigbook recipes …` (the catalog or a hub)."""

from __future__ import annotations

import typer
from rich.table import Table

from rigbook.cli.output import JsonOption, console, emit, handled, print_json
from rigbook.recipe import dump_recipe, list_recipes, load_recipe_file, recipe_hash, search_recipes
from rigbook.recipe.resolve import resolve_recipe
from rigbook.recipe.schema import Recipe, recipe_json_schema

recipe_app = typer.Typer(help="Validate, inspect and hash one recipe.", no_args_is_help=True)
recipes_app = typer.Typer(
    help="List, show and search the built-in catalog (or a hub with --hub).", no_args_is_help=True
)

HubOption = typer.Option(
    None, "--hub", help="Read from a rigbook hub at this URL instead of the built-in catalog."
)


def _summary_row(recipe: Recipe) -> dict:
    return {
        "slug": recipe.slug,
        "title": recipe.title,
        "engine": recipe.engine,
        "gpus": recipe.gpu_count,
        "card": recipe.hardware[0].card if recipe.hardware else "CPU",
        "points": len(recipe.perf_points),
    }


def _table(recipes: list[Recipe]) -> None:
    rows = [_summary_row(r) for r in recipes]
    widest = max((len(row["slug"]) for row in rows), default=0)
    if console.width < widest + 50:
        # Too narrow for a table that keeps slugs whole (they are for copying): one recipe per two lines.
        console.print(f"{len(rows)} recipe(s)")
        for row in rows:
            console.print(f"[bold]{row['slug']}[/]", soft_wrap=True)
            console.print(
                f"  {row['engine'] or '?'} · {row['gpus']} GPU(s) · {row['card']} · "
                f"{row['points']} perf point(s)"
            )
        return
    table = Table(title=f"{len(rows)} recipe(s)")
    table.add_column("slug", no_wrap=True)
    for name in ("engine", "GPUs", "card", "perf points"):
        table.add_column(name)
    for row in rows:
        table.add_row(
            row["slug"], row["engine"] or "?", str(row["gpus"]), row["card"], str(row["points"])
        )
    console.print(table)


def _show(recipe: Recipe) -> None:
    console.print(f"[bold]{recipe.title}[/]  ({recipe.slug})")
    if recipe.summary:
        console.print(recipe.summary, highlight=False)
    console.print(
        f"engine: {recipe.engine or '?'}  GPUs: {recipe.gpu_count}  license: {recipe.license or 'unknown'}"
    )
    if recipe.config.launch:
        console.print("launch: " + " ".join(recipe.config.launch), markup=False, highlight=False)
    for p in recipe.perf_points:
        if p.decode_tok_s is not None:
            console.print(
                f"  c={p.concurrency} decode {p.decode_tok_s} tok/s ({p.claimed_by}) {p.notes or ''}",
                markup=False,
            )
    from rigbook.quality.claims import recipe_quality
    from rigbook.quality.present import claim_line

    claims = recipe_quality(recipe)
    if claims:
        console.print("quality claims:")
    for q in claims:
        console.print(f"  {claim_line(q)}", markup=False, highlight=False)
    for u in recipe.ext.unknowns:
        console.print(f"  unknown: {u}", markup=False)


def _hub_recipes(hub: str) -> list[Recipe]:
    from rigbook.hub.client import HubClient

    return HubClient(hub).list_recipes()


@recipe_app.command("validate")
def validate(
    path: str = typer.Argument(..., help="A recipe file path or URL."), as_json: bool = JsonOption
) -> None:
    """Validate a recipe: exit 0 when valid, 2 with every problem listed by field path."""
    with handled(as_json):
        recipe = load_recipe_file(path)
        emit(
            {"valid": True, "slug": recipe.slug, "content_hash": recipe_hash(recipe)},
            as_json,
            lambda: console.print(f"[green]valid[/]: {recipe.slug}"),
        )


@recipe_app.command("schema")
def schema() -> None:
    """Print the recipe JSON Schema."""
    print_json(recipe_json_schema())


@recipe_app.command("hash")
def hash_(
    path: str = typer.Argument(..., help="A recipe slug, file path or URL."),
    as_json: bool = JsonOption,
) -> None:
    """Print the recipe's canonical content hash (docs/recipe.md says how it is computed)."""
    with handled(as_json):
        recipe = resolve_recipe(path)
        digest = recipe_hash(recipe)
        emit({"slug": recipe.slug, "content_hash": digest}, as_json, lambda: print(digest))


@recipe_app.command("show")
def show_one(
    ref: str = typer.Argument(None, help="A recipe slug, file path or URL."),
    file: str = typer.Option(None, "--file", help="A recipe file path or URL."),
    as_json: bool = JsonOption,
) -> None:
    """Show one recipe; with --json, the record exactly as loaded."""
    with handled(as_json):
        if not (ref or file):
            from rigbook.errors import InputError

            raise InputError("E_INPUT", "give a recipe slug, path or URL, or --file PATH")
        recipe = load_recipe_file(file) if file else resolve_recipe(ref)
        emit(dump_recipe(recipe), as_json, lambda: _show(recipe))


@recipes_app.command("list")
def list_(hub: str = HubOption, as_json: bool = JsonOption) -> None:
    """List the recipes."""
    with handled(as_json):
        recipes = _hub_recipes(hub) if hub else list_recipes()
        emit([_summary_row(r) for r in recipes], as_json, lambda: _table(recipes))


@recipes_app.command("show")
def show(slug: str, hub: str = HubOption, as_json: bool = JsonOption) -> None:
    """Show one recipe of the catalog (or the hub)."""
    with handled(as_json):
        recipe = resolve_recipe(slug, hub=hub)
        emit(dump_recipe(recipe), as_json, lambda: _show(recipe))


@recipes_app.command("search")
def search(text: str, hub: str = HubOption, as_json: bool = JsonOption) -> None:
    """Find recipes whose slug, title, summary, tags, model or card contain every word of TEXT."""
    with handled(as_json):
        found = search_recipes(text, _hub_recipes(hub) if hub else None)
        emit([_summary_row(r) for r in found], as_json, lambda: _table(found))


def register(app: typer.Typer) -> None:
    """Add the recipe command groups to the main app."""
    app.add_typer(recipe_app, name="recipe")
    app.add_typer(recipes_app, name="recipes")
