"""A held-out port of SymbolicAI's ``LLMDataModel`` tests to ``hoare.compat.symbolicai``.

Upstream: https://github.com/ExtensityAI/symbolicai at commit
6f11b4bfbb2a36de62c6e8dd1545572689208bf5, five files (209 tests):

=================================================  ========  ======  ==========
file                                               upstream  ported  not ported
=================================================  ========  ======  ==========
tests/contract/test_llmdatamodel_basic.py                24      24           0
tests/contract/test_llmdatamodel_advanced.py             51      51           0
tests/contract/test_llmdatamodel_comprehensive.py        75      71           4
tests/contract/test_llmdatamodel_integration.py          27      27           0
tests/contract/test_llmdatamodel_negative_paths.py       32      31           1
total                                                   209     204           5
=================================================  ========  ======  ==========

Each test here has the scenario and assertions of its upstream test, rewritten: models
are renamed where no assertion reads the name, and near-identical upstream tests are
grouped into tables whose ``pytest.param`` ids, or a ``# file: test_name`` comment,
name the upstream tests they port (one upstream test may become several rows).

Not ported (SymbolicAI-internal, or a difference the README states):

* comprehensive ``test_generate_type_description``: calls the private
  ``LLMDataModel._generate_type_description``.
* comprehensive ``test_resolve_allof_type``: calls the private ``_resolve_allof_type``.
* comprehensive ``test_is_const_field``: calls the private ``_is_const_field``.
* comprehensive ``test_has_default_value``: calls the private ``_has_default_value``.
* negative_paths ``test_json_with_inf_and_nan``: asserts that a float field accepts
  ``math.inf`` and ``math.nan``; README, "## Reliability": "`LLMDataModel` sets
  `allow_inf_nan=False` (unlike plain pydantic): `NaN`/`Infinity` never pass a float
  field unless a model opts back in".

Assertions left out of ported tests (a deliberate difference of the schema text, pinned
by ``tests/compat/test_compat_symbolicai.py::test_simplify_json_schema``; SymbolicAI lists the
root model's fields again, with their descriptions, under ``[[Definitions]]``; hoare
puts each description on the field's own ``[[Schema]]`` line and lists only the
models and enums referred to under ``[[Definitions]]``):

* advanced ``test_definitions_generic_message_and_preserved_descriptions_for_nested_dict``:
  ``"- ComplexDocument:" in instructions`` (the root model under ``[[Definitions]]``).
* advanced ``test_examples_render_even_without_description``: the exact
  ``[[Definitions]]`` lines ``'  - "title": No definition provided. Focus on the
  [[Schema]] and the prompt to infer the expected structure and constraints.'`` and
  ``'  - "name": Name field'``, and the indentation of ``"    - Examples:"``,
  ``"      - a"`` and ``"    - Example: 42"``. hoare shows a field without a
  description by its title, and its examples as bullets indented below the field's
  line; the port checks those bullets, the description and the single example with the
  indentation stripped.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, Optional, Union

import pytest
from pydantic import (
    Field,
    ValidationError,
    confloat,
    conint,
    conlist,
    constr,
    create_model,
    field_validator,
)
from pydantic.errors import PydanticSchemaGenerationError
from pydantic_core import SchemaError

from hoare.compat.symbolicai import (
    Const,
    CustomConstraint,
    LengthConstraint,
    LLMDataModel,
    build_dynamic_llm_datamodel,
)

# -- helpers ------------------------------------------------------------------------------

_BLOCK = re.compile(r"\[\[Example(?: \d+)?]]\s+```json\s+(.*?)\s+```", re.DOTALL)


def json_examples(instructions: str) -> list[Any]:
    """Every ``[[Example]]`` / ``[[Example N]]`` JSON block of ``instruct_llm()``, parsed."""
    return [json.loads(block) for block in _BLOCK.findall(instructions)]


def outline(text: str) -> tuple[bool, bool, set[str]]:
    """What a rendering is made of: a ``[[...]]`` line, ``-`` bullet lines, and the
    names left of a colon on the other lines."""
    rows = [row.strip() for row in text.splitlines()]
    header = any(row.startswith("[[") and row.endswith("]]") for row in rows)
    bullets = any(row.startswith("-") for row in rows)
    names = {row.split(":", 1)[0].strip() for row in rows
             if ":" in row and not row.startswith("-")}
    return header, bullets, names - {""}


def shows(text: str, key: str, value: object = None) -> bool:
    """``key`` (and ``value``) as a rendered ``key: value`` pair, spacing aside."""
    if value is None:
        return any(f"{key}{gap}:" in text for gap in ("", " "))
    return any(f"{key}{sep}{value}" in text for sep in (": ", " : ", ":"))


def bulleted(text: str, item: object) -> bool:
    """``item`` as a list entry in a rendering, bullet style aside."""
    return any(f"{lead}{item}" in text for lead in ("- : ", "- ", "-: ", "  "))


def stripped_lines(text: str) -> list[str]:
    return [row.strip() for row in text.splitlines()]


def model_of(name: str, **fields: Any) -> type[LLMDataModel]:
    """A throw-away ``LLMDataModel`` subclass with the given ``(type, default)`` fields."""
    return create_model(name, __base__=LLMDataModel, **fields)  # type: ignore[no-any-return, call-overload]


# =========================================================================================
# tests/contract/test_llmdatamodel_basic.py
# =========================================================================================

class Residence(LLMDataModel):
    street: str
    city: str


class Member(LLMDataModel):
    name: str
    age: int | None


class Musings(LLMDataModel):
    thoughts: list[str]


class Account(LLMDataModel):
    name: str
    age: int | None
    address: Residence
    tags: list[str]
    metadata: dict[str, int]


class IntKeyed(LLMDataModel):
    int_dict: dict[int, str]
    mixed_dict: dict[int, dict[str, int]]


def make_account(**changes: Any) -> Account:
    values: dict[str, Any] = dict(name="Alice", age=30, address=Residence(street="Main", city="NY"),
                                  tags=["engineer", "runner"], metadata={"score": 42})
    return Account(**(values | changes))


def test_str_starts_with_the_header_and_shows_nested_values() -> None:
    # basic: test_str_representation_with_header_and_nested
    text = str(make_account(section_header="User Info"))
    header, bullets, names = outline(text)
    assert header and text.startswith("[[User Info]]")
    assert {"name", "age", "address"} <= names
    for value in ("Alice", "30", "Main", "NY", "score"):
        assert value in text
    assert bullets  # the tags are bullet points


def test_str_keeps_fields_that_are_none() -> None:
    # basic: test_str_includes_none_values
    bob = make_account(name="Bob", age=None, address=Residence(street="Elm", city="LA"),
                       tags=[], metadata={})
    assert "None" in str(bob)


def test_str_of_a_dict_holding_an_arbitrary_object() -> None:
    # basic: test_str_with_invalid_nested_structure
    class Loose(LLMDataModel):
        data: dict

    assert "data" in str(Loose(data={"key": object()}))


def test_example_of_a_model_with_nested_parts() -> None:
    # basic: test_generate_example_json_complex
    example = LLMDataModel.generate_example_json(Account)
    assert isinstance(example["name"], str) and isinstance(example["age"], int)
    assert isinstance(example["address"], dict)
    assert {"street", "city"} <= example["address"].keys()
    assert isinstance(example["tags"], list) and isinstance(example["metadata"], dict)


def test_example_of_an_int_or_str_value_picks_one_of_them() -> None:
    # basic: test_generate_example_json_union_resolution
    example = LLMDataModel.generate_example_json(build_dynamic_llm_datamodel(int | str))
    assert isinstance(example["value"], int | str)


def test_example_of_an_arbitrary_object_field() -> None:
    # basic: test_generate_example_json_with_invalid_type
    class Opaque(LLMDataModel):
        model_config = {"arbitrary_types_allowed": True}
        custom_obj: object

    assert "custom_obj" in LLMDataModel.generate_example_json(Opaque)


def test_schema_text_names_every_field_and_kind() -> None:
    # basic: test_simplify_json_schema_contains_required_information
    text = Account.simplify_json_schema()
    assert text.startswith("[[Schema]]")
    assert all(name in text for name in ("name", "age", "address", "tags", "metadata"))
    lowered = text.lower()
    assert any(word in lowered for word in ("string", "text", "str"))
    assert any(word in lowered for word in ("integer", "number", "int"))
    assert any(word in lowered for word in ("nested", "object"))


def test_schema_text_of_a_const_field_shows_its_value() -> None:
    # basic: test_simplify_json_schema_with_const_fields
    class Pinned(LLMDataModel):
        const_field: str = Const("fixed_value")
        normal_field: int

    text = Pinned.simplify_json_schema()
    assert "const_field" in text and "fixed_value" in text


def test_instructions_of_a_plain_model_have_one_example_with_its_fields() -> None:
    # basic: test_instruct_llm_single_example_for_standard_model
    text = Account.instruct_llm()
    assert "[[Result]]" in text and "[[Schema]]" in text
    examples = json_examples(text)
    assert len(examples) == 1
    assert set(examples[0]) == set(Account.model_fields) - {"section_header"}


def test_instructions_for_int_or_str() -> None:
    # basic: test_union_int_str
    text = build_dynamic_llm_datamodel(int | str).instruct_llm()
    assert any(word in text for word in ("integer", "string", "int", "str"))
    examples = json_examples(text)
    assert examples
    assert {type(e["value"]) for e in examples} & {int, str}


def test_instructions_for_an_optional_str() -> None:
    # basic: test_union_with_optional
    examples = json_examples(build_dynamic_llm_datamodel(str | None).instruct_llm())
    assert examples
    assert all(e["value"] is None or isinstance(e["value"], str) for e in examples)


def test_instructions_for_a_model_with_a_list_field() -> None:
    # basic: test_user_defined_model_non_union
    examples = json_examples(Musings.instruct_llm())
    assert examples and isinstance(examples[0]["thoughts"], list)


def test_instructions_for_a_union_of_containers_of_models() -> None:
    # basic: test_nested_union_complex
    examples = json_examples(
        build_dynamic_llm_datamodel(list[Member] | dict[str, list[int]]).instruct_llm())
    assert examples
    assert all(isinstance(e["value"], list | dict) for e in examples)


def test_validate_and_remedy_do_nothing_by_default() -> None:
    # basic: test_default_validate_and_remedy_are_noops
    place = Residence(street="A", city="B")
    assert place.validate() is None and place.remedy() is None


def test_values_of_the_wrong_types_are_rejected() -> None:
    # basic: test_invalid_field_types
    with pytest.raises(ValidationError):
        Account(name=123, age="not_an_int", address="not_an_address",  # type: ignore[arg-type]
                tags="not_a_list", metadata=[1, 2, 3])  # type: ignore[arg-type]


def test_const_field_takes_only_its_value() -> None:
    # basic: test_const_field_validation
    class Fixed(LLMDataModel):
        const_val: str = Const("must_be_this")

    assert Fixed().const_val == "must_be_this"
    with pytest.raises(ValidationError):
        Fixed(const_val="something_else")


def test_an_unknown_str_enum_value_is_rejected() -> None:
    # basic: test_invalid_enum_value
    class State(StrEnum):
        ACTIVE = "active"
        INACTIVE = "inactive"

    class HasState(LLMDataModel):
        status: State

    with pytest.raises(ValidationError):
        HasState(status="invalid_status")  # type: ignore[arg-type]


def test_a_value_matching_no_union_branch_is_rejected() -> None:
    # basic: test_union_validation_all_branches_fail
    with pytest.raises(ValidationError):
        build_dynamic_llm_datamodel(int | str)(value=[1, 2, 3])


def test_str_of_a_chain_of_a_thousand_models() -> None:
    # basic: test_recursive_model_depth_limit
    class Link(LLMDataModel):
        value: str
        child: Link | None = None

    chain = None
    for level in range(1000):
        chain = Link(value=f"level_{level}", child=chain)
    text = str(chain)
    assert text and "level_" in text


def test_long_and_non_ascii_field_names() -> None:
    # basic: test_malformed_json_schema
    class Odd(LLMDataModel):
        field_with_very_long_name_that_might_cause_issues_in_formatting: str
        field_with_special_chars_αβγ: int

    assert "field_with_very_long_name" in Odd.simplify_json_schema()
    assert isinstance(LLMDataModel.generate_example_json(Odd), dict)


def test_tree_with_optional_list_of_children() -> None:
    # basic: test_circular_reference_in_union
    class Tree(LLMDataModel):
        value: str
        children: list[Tree] | None = None

    tree = Tree(value="root", children=[
        Tree(value="child1"), Tree(value="child2", children=[Tree(value="grandchild")])])
    text = str(tree)
    assert "root" in text and "child1" in text
    schema = Tree.simplify_json_schema()
    assert "recursive" in schema.lower() or "children" in schema


# =========================================================================================
# tests/contract/test_llmdatamodel_advanced.py
# =========================================================================================

class Signup(LLMDataModel):
    email: str
    age: int

    @field_validator("email")
    @classmethod
    def _needs_at(cls, email: str) -> str:
        if "@" not in email:
            raise ValueError("Invalid email")
        return email

    @field_validator("age")
    @classmethod
    def _plausible(cls, age: int) -> int:
        if not 0 <= age <= 150:
            raise ValueError("Invalid age")
        return age

    def validate(self) -> str | None:  # type: ignore[override]
        return "User must be 18 or older" if self.age < 18 else None

    def remedy(self) -> str | None:
        return "Set age to 18 for minimum requirement" if self.age < 18 else None


class Permission(LLMDataModel):
    mode: Literal["read", "write", "execute"]
    level: Literal[1, 2, 3]
    flag: Literal[True]


class UnionBag(LLMDataModel):
    simple_union: int | str
    complex_union: list[int] | dict[str, str] | None
    nested_union: list[int | str] | dict[str, bool | float]


class Pair(LLMDataModel):
    name: str
    value: int


class EveryKind(LLMDataModel):
    str_field: str
    int_field: int
    float_field: float
    bool_field: bool
    opt_str: str | None
    opt_int: int | None
    list_field: list[str]
    dict_field: dict[str, int]
    set_field: set[int]
    tuple_field: tuple[str, int, bool]
    nested_model: Pair
    list_of_models: list[Pair]
    dict_of_models: dict[str, Pair]


class Blobs(LLMDataModel):
    model_config = {"arbitrary_types_allowed": True}
    binary_data: bytes
    bytearray_data: bytearray


class Picks(LLMDataModel):
    class Choice(StrEnum):
        OPTION_A = "a"
        OPTION_B = "b"

    enum_field: Choice
    literal_union: Literal["x"] | Literal["y"] | Literal["z"]


@pytest.mark.parametrize(("hook", "age", "expected"), [
    pytest.param("validate", 16, "User must be 18 or older",
                 id="advanced-test_validate_returns_error_message"),
    pytest.param("validate", 25, None, id="advanced-test_validate_returns_none_when_valid"),
    pytest.param("remedy", 16, "Set age to 18 for minimum requirement",
                 id="advanced-test_remedy_provides_fix_suggestion"),
    pytest.param("remedy", 25, None, id="advanced-test_remedy_returns_none_when_no_fix_needed"),
])
def test_overridden_validate_and_remedy_hooks(hook: str, age: int, expected: str | None) -> None:
    assert getattr(Signup(email="test@example.com", age=age), hook)() == expected


def test_schema_text_of_literal_fields() -> None:
    # advanced: test_literal_types_in_schema
    text = Permission.simplify_json_schema()
    assert all(name in text for name in ("mode", "level", "flag"))
    assert any(choice in text for choice in ("read", "write", "execute"))


def test_example_of_literal_fields() -> None:
    # advanced: test_literal_types_in_example
    example = LLMDataModel.generate_example_json(Permission)
    assert example["mode"] in ("read", "write", "execute")
    assert example["level"] in (1, 2, 3)
    assert example["flag"] is True


def test_example_of_a_union_of_literals() -> None:
    # advanced: test_literal_union_handling
    assert LLMDataModel.generate_example_json(Picks)["literal_union"] in ("x", "y", "z")


def test_example_of_an_optional_str_is_a_string() -> None:
    # advanced: test_union_resolution_with_none
    example = LLMDataModel.generate_example_json(build_dynamic_llm_datamodel(Union[str, None]))  # noqa: UP007
    assert example["value"] == "example_string"


def test_instructions_for_a_union_of_two_nested_containers_show_two_examples() -> None:
    # advanced: test_union_resolution_nested_containers
    wrapped = build_dynamic_llm_datamodel(Union[list[list[int]], dict[str, dict[str, str]]])  # noqa: UP007
    assert len(_BLOCK.findall(wrapped.instruct_llm())) == 2


def test_example_of_a_model_or_dict_union() -> None:
    # advanced: test_union_with_basemodel
    wrapped = build_dynamic_llm_datamodel(Union[Pair, dict[str, Any]])  # noqa: UP007
    assert "value" in LLMDataModel.generate_example_json(wrapped)


def test_str_of_bytes_fields() -> None:
    # advanced: test_format_field_with_bytes
    text = str(Blobs(binary_data=b"hello", bytearray_data=bytearray(b"world")))
    assert "binary_data:" in text and "bytearray_data:" in text


def test_str_of_set_and_tuple_fields() -> None:
    # advanced: test_format_field_with_set
    full = EveryKind(
        str_field="test", int_field=42, float_field=3.14, bool_field=True, opt_str="optional",
        opt_int=None, list_field=["a", "b"], dict_field={"key": 1}, set_field={1, 2, 3},
        tuple_field=("x", 1, False), nested_model=Pair(name="nested", value=100),
        list_of_models=[Pair(name="item", value=1)],
        dict_of_models={"key": Pair(name="dict_item", value=2)})
    text = str(full)
    assert "set_field:" in text and "tuple_field:" in text


def test_format_field_honours_a_large_indent() -> None:
    # advanced: test_format_field_with_large_indent
    line = Pair(name="test", value=42).format_field("key", "value", indent=100, depth=0)
    assert line.startswith(" " * 100)


def test_str_of_an_empty_string_and_a_zero() -> None:
    # advanced: test_format_field_empty_string
    text = str(Pair(name="", value=0))
    assert "name: " in text and "value: 0" in text


def test_schema_text_of_self_references() -> None:
    # advanced: test_schema_with_forward_references
    class Selfish(LLMDataModel):
        self_ref: Optional[Selfish] = None  # noqa: UP045
        list_ref: list[Selfish] = Field(default_factory=list)

    text = Selfish.simplify_json_schema()
    assert "self_ref" in text and "list_ref" in text


def test_example_uses_non_empty_default_factories() -> None:
    # advanced: test_schema_with_complex_defaults
    class Prefilled(LLMDataModel):
        list_default: list[int] = Field(default_factory=lambda: [1, 2, 3])
        dict_default: dict[str, str] = Field(default_factory=lambda: {"a": "b"})

    example = LLMDataModel.generate_example_json(Prefilled)
    assert example["list_default"] == [1, 2, 3]
    assert example["dict_default"] == {"a": "b"}


def test_instructions_name_fields_of_every_kind() -> None:
    # advanced: test_instruct_llm_with_all_field_types
    text = EveryKind.instruct_llm()
    for name in ("str_field", "int_field", "float_field", "bool_field", "set_field",
                 "tuple_field"):
        assert name in text


def test_instructions_of_a_model_with_several_union_fields() -> None:
    # advanced: test_instruct_llm_union_example_generation
    for example in json_examples(UnionBag.instruct_llm()):
        assert {"simple_union", "complex_union", "nested_union"} <= example.keys()


def test_instructions_of_a_model_without_fields() -> None:
    # advanced: test_instruct_llm_with_empty_model
    class Nothing(LLMDataModel):
        pass

    text = Nothing.instruct_llm()
    assert "[[Result]]" in text and "[[Schema]]" in text


def test_instructions_for_a_dict_of_models_or_a_list_of_ints() -> None:
    # advanced: test_instruct_llm_dict_person_union_list
    class Human(LLMDataModel):
        name: str = Field(description="Name")
        age: int | None = Field(description="Age")

    text = build_dynamic_llm_datamodel(dict[int, Human] | list[int]).instruct_llm()
    assert "[[Definitions]]" in text and "Human:" in text
    assert '"name"' in text and '"age"' in text
    assert "object of nested object (Human)" in text and "array of integer" in text
    lowered = text.lower()
    assert ("array" in lowered and "integer" in lowered) or ("list" in lowered and "int" in lowered)
    assert any(word in lowered for word in ("dictionary", "dict", "object")) and "Human" in text
    first, second = json_examples(text)
    assert isinstance(first["value"], dict)
    assert isinstance(second["value"], list)


def test_instructions_of_a_document_with_nested_dicts_and_models() -> None:
    # advanced: test_definitions_generic_message_and_preserved_descriptions_for_nested_dict
    # (not ported: "- ComplexDocument:" -- see the module docstring)
    class Meta(LLMDataModel):
        author: str
        version: str
        tags: list[str]

    class Block(LLMDataModel):
        id: str
        title: str
        paragraphs: list[str]

    class Translations(LLMDataModel):
        translations: dict[str, dict[str, str]] = Field(
            ..., description="Nested dictionary mapping language -> section -> text")

    class Document(LLMDataModel):
        doc_id: str
        metadata: Meta
        content: list[Block]
        config: Translations
        notes: str | None

    text = Document.instruct_llm()
    assert "object of object of string" in text
    assert 'notes" (string or null' in text
    assert "[[Definitions]]" in text


def test_field_examples_are_listed_with_or_without_a_description() -> None:
    # advanced: test_examples_render_even_without_description
    # (partly: SymbolicAI's generic "No definition provided..." line and its exact
    # indentation under [[Definitions]] are not ported -- see the module docstring)
    class Sampled(LLMDataModel):
        title: str = Field(examples=["a", "b", "c"])
        name: str = Field(description="Name field", examples=["x", "y"])

    rows = stripped_lines(Sampled.instruct_llm())
    assert "- Examples:" in rows
    assert {"- a", "- b", "- c", "- x", "- y"} <= set(rows)
    assert any(row.startswith('- "name"') and row.endswith("Name field") for row in rows)

    class OneSample(LLMDataModel):
        value: int = Field(json_schema_extra={"example": 42})

    assert "- Example: 42" in stripped_lines(OneSample.instruct_llm())


def test_dynamic_model_of_any() -> None:
    # advanced: test_build_dynamic_with_any_type
    wrapped = build_dynamic_llm_datamodel(Any)
    assert wrapped(value="anything").value == "anything"
    assert wrapped(value={"complex": ["structure"]}).value == {"complex": ["structure"]}


def test_dynamic_model_of_a_union_of_unions() -> None:
    # advanced: test_build_dynamic_with_union_of_unions
    wrapped = build_dynamic_llm_datamodel(Union[int | str, list | dict])  # noqa: UP007
    for value in (42, "text", [1, 2, 3], {"key": "value"}):
        assert wrapped(value=value).value == value


def test_dynamic_model_field_is_described() -> None:
    # advanced: test_build_dynamic_field_description
    description = build_dynamic_llm_datamodel(str).model_fields["value"].description
    assert description is not None and "dynamically generated" in description


def test_field_validators_reject_bad_values() -> None:
    # advanced: test_validation_error_on_invalid_data
    with pytest.raises(ValidationError):
        Signup(email="invalid", age=200)


def test_field_validator_message_is_in_the_error() -> None:
    # advanced: test_validation_with_pydantic_validators
    with pytest.raises(ValidationError, match="Invalid email"):
        Signup(email="no-at-sign", age=30)


def test_const_field_rejects_another_value() -> None:
    # advanced: test_const_field_immutability
    class Frozen(LLMDataModel):
        const_value: str = Const("fixed")

    assert Frozen().const_value == "fixed"
    with pytest.raises(ValidationError):
        Frozen(const_value="different")


def test_schema_text_of_a_hundred_fields() -> None:
    # advanced: test_large_model_serialization
    wide = model_of("Wide", **{f"field_{index}": (str, ...) for index in range(100)})
    text = wide.simplify_json_schema()
    assert "field_0" in text and "field_99" in text


def test_str_of_a_hundred_nested_models_is_cut() -> None:
    # advanced: test_deep_recursion_limit
    class Deep(LLMDataModel):
        value: str
        nested: Optional[Deep] = None  # noqa: UP045

    top = Deep(value="leaf")
    for level in range(100):
        top = Deep(value=f"level_{level}", nested=top)
    text = str(top)
    assert "level_99" in text and "level_50" in text
    assert "<max depth reached>" in text


def test_example_json_cannot_be_injected_into() -> None:
    # advanced: test_json_injection_prevention
    class Carrier(LLMDataModel):
        data: str

    Carrier(data='"},"injected":"value","original":"')
    example = LLMDataModel.generate_example_json(Carrier)
    assert "injected" not in json.loads(json.dumps(example))


def test_str_of_a_null_byte() -> None:
    # advanced: test_null_byte_handling
    class Text(LLMDataModel):
        text: str

    text = str(Text(text="before\x00after"))
    assert "before\x00after" in text or "before" in text


def test_a_list_is_no_int_str_or_bool() -> None:
    # advanced: test_invalid_union_all_branches_fail
    class Scalar(LLMDataModel):
        value: int | str | bool

    with pytest.raises(ValidationError):
        Scalar(value=[1, 2, 3])  # type: ignore[arg-type]


def test_constrained_types_are_enforced() -> None:
    # advanced: test_length_constraint_violation, test_regex_constraint_violation,
    # test_numeric_constraint_violation, test_collection_size_constraint_violation
    class Lengths(LLMDataModel):
        short_text: constr(max_length=5)  # type: ignore[valid-type]
        long_text: constr(min_length=10)  # type: ignore[valid-type]

    class Mail(LLMDataModel):
        email: constr(pattern=r"^[\w\.-]+@[\w\.-]+\.\w+$")  # type: ignore[valid-type]

    class Numbers(LLMDataModel):
        positive: conint(gt=0)  # type: ignore[valid-type]
        percentage: confloat(ge=0, le=100)  # type: ignore[valid-type]

    class Sized(LLMDataModel):
        items: conlist(str, min_length=2, max_length=5)  # type: ignore[valid-type]

    for build in (lambda: Lengths(short_text="too long string", long_text="short"),
                  lambda: Mail(email="not_an_email"),
                  lambda: Numbers(positive=-5, percentage=150),
                  lambda: Sized(items=["only_one"]),
                  lambda: Sized(items=["1", "2", "3", "4", "5", "6"])):
        with pytest.raises(ValidationError):
            build()


def test_an_unknown_colour_is_rejected() -> None:
    # advanced: test_wrong_enum_value
    class Colour(StrEnum):
        RED = "red"
        GREEN = "green"
        BLUE = "blue"

    class Painted(LLMDataModel):
        color: Colour

    with pytest.raises(ValidationError):
        Painted(color="yellow")  # type: ignore[arg-type]


def test_values_outside_the_literals_are_rejected() -> None:
    # advanced: test_invalid_literal_value
    with pytest.raises(ValidationError):
        Permission(mode="delete", level=4, flag=False)  # type: ignore[arg-type]


def test_an_error_three_models_deep_names_the_field() -> None:
    # advanced: test_deeply_nested_validation_error
    class Bottom(LLMDataModel):
        value: int

    class Middle(LLMDataModel):
        level3: Bottom

    class Top(LLMDataModel):
        level2: Middle

    with pytest.raises(ValidationError) as caught:
        Top(level2={"level3": {"value": "not_an_int"}})  # type: ignore[arg-type]
    message = str(caught.value).lower()
    assert "value" in message or "int" in message


def test_str_and_schema_of_two_nodes_that_hold_each_other() -> None:
    # advanced: test_circular_dependency_handling
    class Vertex(LLMDataModel):
        value: str
        children: list[Vertex] | None = None

    first = Vertex(value="node1")
    second = Vertex(value="node2", children=[first])
    first.children = [second]
    text = str(first)
    assert "node1" in text or "node2" in text
    assert "value" in Vertex.simplify_json_schema()


def test_str_of_five_hundred_nested_models() -> None:
    # advanced: test_excessive_recursion_depth
    class Deep(LLMDataModel):
        value: int
        nested: Optional[Deep] = None  # noqa: UP045

    top = Deep(value=0)
    for level in range(1, 500):
        top = Deep(value=level, nested=top)
    assert str(top)


def test_str_of_fields_given_by_odd_aliases() -> None:
    # advanced: test_malformed_field_names
    class Aliased(LLMDataModel):
        model_config = {"arbitrary_types_allowed": True}
        field_with_spaces: str = Field(alias="field with spaces")
        field_with_special_chars: int = Field(alias="field!@#$%")

    text = str(Aliased(**{"field with spaces": "test", "field!@#$%": 42}))
    assert "test" in text and "42" in text


def test_str_of_an_accented_value() -> None:
    # advanced: test_unicode_normalization
    class Text(LLMDataModel):
        text: str

    assert "caf" in str(Text(text="café"))


def test_str_has_names_separators_and_values() -> None:
    # advanced: test_format_resilience_to_changes
    text = str(Pair(name="test", value=42))
    assert any(":" in row for row in text.splitlines())
    assert all(part in text for part in ("name", "value", "test", "42"))


# =========================================================================================
# tests/contract/test_llmdatamodel_comprehensive.py
# =========================================================================================

class OneText(LLMDataModel):
    value: str


class Nesting(LLMDataModel):
    level1: str
    nested: Optional[Nesting] = None  # noqa: UP045


class Coded(LLMDataModel):
    class Status(StrEnum):
        ACTIVE = "active"
        INACTIVE = "inactive"

    status: Status
    code: int


class Bounded(LLMDataModel):
    name: str = Field(..., min_length=1, max_length=50)
    age: int = Field(..., ge=0, le=150)
    email: str = Field(..., pattern=r"^[\w\.-]+@[\w\.-]+\.\w+$")


class Defaults(LLMDataModel):
    required_field: str
    optional_field: str = "default_value"
    const_field: str = Const("immutable")


class Containers(LLMDataModel):
    list_of_lists: list[list[int]]
    dict_of_dicts: dict[str, dict[str, str]]
    union_field: int | str | list[str]
    optional_union: dict[str, Any] | list[Any] | None


class Family(LLMDataModel):
    name: str
    children: list[Family] = Field(default_factory=list)


class Punctuated(LLMDataModel):
    field_with_quotes: str
    field_with_newlines: str
    field_with_unicode: str


def test_length_constraint_record() -> None:
    # comprehensive: test_length_constraint_creation
    rule = LengthConstraint()
    rule.field_name, rule.min_length, rule.max_length = "test_field", 5, 20
    assert (rule.field_name, rule.min_length, rule.max_length) == ("test_field", 5, 20)


def test_custom_constraint_record() -> None:
    # comprehensive: test_custom_constraint_creation
    assert CustomConstraint(rule="must be alphanumeric").rule == "must be alphanumeric"


def test_const_field_next_to_a_required_one() -> None:
    # comprehensive: test_const_field_creation
    assert Defaults(required_field="test").const_field == "immutable"
    with pytest.raises(ValidationError):
        Defaults(required_field="test", const_field="different")


@pytest.mark.parametrize(("key", "empty"), [
    pytest.param("empty_list", [], id="comprehensive-test_format_field_empty_list"),
    pytest.param("empty_dict", {}, id="comprehensive-test_format_field_empty_dict"),
])
def test_format_field_of_an_empty_container(key: str, empty: object) -> None:
    assert OneText(value="test").format_field(key, empty, indent=0, depth=0) == f"{key}:\n"


def test_format_field_of_dicts_in_dicts() -> None:
    # comprehensive: test_format_field_deeply_nested
    shown = OneText(value="test").format_field(
        "nested", {"level1": {"level2": {"level3": ["item1", "item2"]}}}, indent=0, depth=0)
    assert all(shows(shown, key) for key in ("level1", "level2", "level3"))


def test_str_keeps_quotes_newlines_and_emoji() -> None:
    # comprehensive: test_format_field_with_special_chars
    text = str(Punctuated(field_with_quotes='text with "quotes"',
                          field_with_newlines="line1\nline2",
                          field_with_unicode="emoji 😊 and symbols ™"))
    assert 'text with "quotes"' in text and "line1\nline2" in text and "emoji 😊" in text


def test_format_field_of_a_list_of_mixed_items() -> None:
    # comprehensive: test_format_field_mixed_types_in_list
    shown = OneText(value="test").format_field(
        "mixed", [1, "string", {"key": "value"}, [1, 2, 3]], indent=0, depth=0)
    assert bulleted(shown, 1) and bulleted(shown, "string")
    assert shows(shown, "key", "value")


def test_str_of_a_family_tree() -> None:
    # comprehensive: test_str_with_recursive_model
    tree = Family(name="parent", children=[
        Family(name="child1"), Family(name="child2", children=[Family(name="grandchild")])])
    text = str(tree)
    assert all(name in text for name in ("parent", "child1", "child2", "grandchild"))


def test_str_without_a_header() -> None:
    # comprehensive: test_str_without_section_header
    text = str(OneText(value="test"))
    assert not text.startswith("[[") and shows(text, "value", "test")


def test_str_of_an_enum_shows_its_value() -> None:
    # comprehensive: test_str_with_enum_field
    text = str(Coded(status=Coded.Status.ACTIVE, code=200))
    assert shows(text, "status", "active") and shows(text, "code", 200)


def test_schema_text_of_an_enum() -> None:
    # comprehensive: test_simplify_schema_with_enum
    text = Coded.simplify_json_schema()
    assert "[[Schema]]" in text and "status" in text
    assert "enum" in text.lower() or "choice" in text.lower()


def test_schema_text_of_constrained_fields() -> None:
    # comprehensive: test_simplify_schema_with_constraints
    text = Bounded.simplify_json_schema()
    assert all(word in text for word in ("name", "age", "email", "string", "integer"))


def test_schema_text_of_a_recursive_model() -> None:
    # comprehensive: test_simplify_schema_with_recursive_model
    text = Family.simplify_json_schema()
    assert "name" in text and "children" in text and "array" in text.lower()


def test_schema_text_of_union_fields() -> None:
    # comprehensive: test_simplify_schema_with_complex_unions
    text = Containers.simplify_json_schema()
    assert "union_field" in text and "optional_union" in text
    assert "Union" in text or "union" in text


def test_schema_text_lists_field_examples() -> None:
    # comprehensive: test_definitions_include_field_examples
    class Query(LLMDataModel):
        intent_tag: str = Field(description="The intent of the query.", examples=["foo", "bar"])
        source_type: str = Field(description="The source type to target for this query.",
                                 examples=["doc", "web"])
        vertical_tags: list[str] = Field(description="1–3 vertical tags describing the domain "
                                                     "focus.",
                                         examples=[["finance"], ["health", "ai"]])

    class Holder(LLMDataModel):
        inner: Query

    text = Holder.simplify_json_schema()
    assert "[[Definitions]]" in text and "Examples:" in text
    for word in ("intent_tag", "foo", "bar", "source_type", "doc", "web", "vertical_tags",
                 "finance", "health", "ai"):
        assert word in text


def test_schema_text_and_example_of_a_large_nested_graph() -> None:
    # comprehensive: test_extremely_complex_very_nested_object
    class Leaf(LLMDataModel):
        id: int
        tags: list[str]
        meta: dict[str, int | str]

    class Node(LLMDataModel):
        name: str
        value: int | str | list[int]
        children: list[Node] = Field(default_factory=list)
        mapping: dict[str, list[Leaf]]
        optional_leaf: Leaf | None = None
        tuple_field: tuple[str, int, bool]
        set_field: set[str]

    class Graph(LLMDataModel):
        graph: Node
        index: dict[int, Node]
        registry: dict[tuple[str, int], dict[bool, list[Leaf]]]
        alt: list[Node | Leaf]
        any_map: dict[str, dict[str, list[int | str]]]

    text = Graph.simplify_json_schema()
    assert "[[Schema]]" in text and "graph" in text
    assert "nested object (Node)" in text and "nested object (Leaf)" in text
    assert "array" in text.lower() and "tuple" in text.lower()

    example = LLMDataModel.generate_example_json(Graph)
    assert isinstance(example["graph"], dict)
    assert isinstance(example["graph"]["children"], list)
    assert isinstance(example["graph"]["mapping"], dict)
    assert isinstance(example["index"], dict)
    assert any(isinstance(key, int) for key in example["index"]) or 123 in example["index"]
    for name, kind in (("registry", dict), ("alt", list), ("any_map", dict)):
        assert isinstance(example[name], kind)


def test_example_of_an_enum_and_an_int() -> None:
    # comprehensive: test_generate_example_with_enum
    example = LLMDataModel.generate_example_json(Coded)
    assert example["status"] == "active" and example["code"] == 123


def test_example_keeps_defaults_and_const_values() -> None:
    # comprehensive: test_generate_example_with_defaults
    assert LLMDataModel.generate_example_json(Defaults) == {
        "required_field": "example_string", "optional_field": "default_value",
        "const_field": "immutable"}


def test_example_of_a_list_of_lists() -> None:
    # comprehensive: test_generate_example_with_nested_lists
    assert LLMDataModel.generate_example_json(Containers)["list_of_lists"][0][0] == 123


def test_example_of_a_recursive_model_has_one_child() -> None:
    # comprehensive: test_generate_example_with_recursive
    example = LLMDataModel.generate_example_json(Family)
    assert example["name"] == "example_string"
    assert isinstance(example["children"], list) and len(example["children"]) == 1
    assert "name" in example["children"][0]


def test_example_of_an_optional_defaulting_to_none() -> None:
    # comprehensive: test_generate_example_with_optional_none
    class MaybeNote(LLMDataModel):
        required: str
        optional: str | None = None

    example = LLMDataModel.generate_example_json(MaybeNote)
    assert example["required"] == "example_string" and example["optional"] is None


def test_example_of_a_union_takes_its_first_alternative() -> None:
    # comprehensive: test_generate_example_complex_union_priority
    wrapped = build_dynamic_llm_datamodel(
        Union[dict[str, list[int]], list[dict[str, int]], str, int])  # noqa: UP007
    value = LLMDataModel.generate_example_json(wrapped)["value"]
    assert isinstance(value, dict) and isinstance(value["example_string"], list)


@pytest.mark.parametrize(("model", "words"), [
    pytest.param(OneText, ("[[Result]]", "[[Schema]]", "[[Example]]"),
                 id="comprehensive-test_instruct_llm_with_section_header"),
    pytest.param(Family, ("[[Result]]", "[[Schema]]", "[[Example]]", "children"),
                 id="comprehensive-test_instruct_llm_with_recursive_model"),
    pytest.param(Bounded, ("[[Schema]]", "[[Example]]", "name", "age", "email"),
                 id="comprehensive-test_instruct_llm_with_constraints"),
])
def test_instructions_contain(model: type[LLMDataModel], words: tuple[str, ...]) -> None:
    text = model.instruct_llm()
    assert all(word in text for word in words)


def test_instructions_of_a_model_with_container_and_union_fields() -> None:
    # comprehensive: test_instruct_llm_multiple_union_examples
    text = Containers.instruct_llm()
    assert "[[Example]]" in text or "[[Example 1]]" in text
    assert all(name in text for name in ("list_of_lists", "dict_of_dicts", "union_field"))


def test_dynamic_model_of_str() -> None:
    # comprehensive: test_build_dynamic_with_primitive
    assert build_dynamic_llm_datamodel(str)(value="test").value == "test"


def test_dynamic_model_of_a_dict_of_mixed_lists() -> None:
    # comprehensive: test_build_dynamic_with_complex_type
    wrapped = build_dynamic_llm_datamodel(dict[str, list[int | str]])
    assert wrapped(value={"key": [1, "two", 3]}).value["key"] == [1, "two", 3]


def test_dynamic_model_of_an_optional_list() -> None:
    # comprehensive: test_build_dynamic_with_optional
    wrapped = build_dynamic_llm_datamodel(Optional[list[str]])  # noqa: UP045
    assert wrapped(value=["a", "b"]).value == ["a", "b"]
    assert wrapped(value=None).value is None


def test_dynamic_model_is_an_llm_data_model() -> None:
    # comprehensive: test_build_dynamic_model_inheritance
    wrapped = build_dynamic_llm_datamodel(int)
    assert issubclass(wrapped, LLMDataModel)
    assert isinstance(wrapped(value=42), LLMDataModel)


def test_dynamic_models_of_different_types_have_different_names() -> None:
    # comprehensive: test_build_dynamic_model_unique_names
    assert build_dynamic_llm_datamodel(str).__name__ != build_dynamic_llm_datamodel(int).__name__


def test_str_of_a_model_without_fields_is_empty() -> None:
    # comprehensive: test_model_with_no_fields
    class Bare(LLMDataModel):
        pass

    assert str(Bare()) == ""


def test_format_field_of_six_nested_dicts() -> None:
    # comprehensive: test_very_deep_nesting
    shown = OneText(value="test").format_field(
        "deep", {"a": {"b": {"c": {"d": {"e": {"f": "value"}}}}}}, indent=0, depth=0)
    assert shows(shown, "f", "value")


def test_str_of_a_parent_with_an_appended_child() -> None:
    # comprehensive: test_circular_reference_handling
    parent = Family(name="parent")
    parent.children.append(Family(name="child"))
    text = str(parent)
    assert "parent" in text and "child" in text
    assert "Family" in str(type(parent))


def test_str_of_an_emoji_value() -> None:
    # comprehensive: test_unicode_in_field_names
    class Party(LLMDataModel):
        emoji_field: str

    assert "🎉" in str(Party(emoji_field="🎉"))


def test_str_keeps_a_ten_thousand_character_value() -> None:
    # comprehensive: test_extremely_long_strings
    long_value = "x" * 10_000
    assert long_value in str(OneText(value=long_value))


def test_example_of_fields_with_escapable_characters_is_valid_json() -> None:
    # comprehensive: test_special_json_characters
    Punctuated(field_with_quotes='"quotes"', field_with_newlines="line1\nline2\ttab",
               field_with_unicode="\\u0041")
    example = LLMDataModel.generate_example_json(Punctuated)
    assert isinstance(json.loads(json.dumps(example)), dict)


@pytest.mark.parametrize(("annotation", "key", "value"), [
    pytest.param(dict[int, str], 123, "example_string",
                 id="comprehensive-test_dict_with_int_keys"),
    pytest.param(dict[float, int], 123.45, 123, id="comprehensive-test_dict_with_float_keys"),
    pytest.param(dict[bool, str], True, "example_string",
                 id="comprehensive-test_dict_with_bool_keys"),
    pytest.param(dict[tuple[str, int], bool], ("example_string", 123), True,
                 id="comprehensive-test_dict_with_tuple_keys"),
    pytest.param(dict[str, int], "example_string", 123,
                 id="comprehensive-test_dict_with_string_keys"),
    pytest.param(dict[Any, str], "example_string", "example_string",
                 id="comprehensive-test_dict_with_any_keys"),
    pytest.param(dict[tuple[int, tuple[str, bool]], float], (123, ("example_string", True)),
                 123.45, id="comprehensive-test_dict_with_complex_tuple_keys"),
])
def test_example_dict_key_follows_the_key_type(annotation: Any, key: object,
                                               value: object) -> None:
    example = build_dynamic_llm_datamodel(annotation).generate_example_json()
    assert isinstance(example["value"], dict)
    assert key in example["value"] and example["value"][key] == value


def test_example_dict_with_frozenset_keys() -> None:
    # comprehensive: test_dict_with_frozenset_keys
    mapping = build_dynamic_llm_datamodel(dict[frozenset[int], str]).generate_example_json()[
        "value"]
    assert isinstance(mapping, dict) and len(mapping) == 1
    (key, value), = mapping.items()
    assert isinstance(key, frozenset) and 123 in key and value == "example_string"


def test_example_of_a_bare_dict() -> None:
    # comprehensive: test_dict_with_unspecified_type
    mapping = build_dynamic_llm_datamodel(dict).generate_example_json()["value"]
    assert isinstance(mapping, dict) and "example_string" in mapping


def test_example_of_dicts_with_various_key_types() -> None:
    # comprehensive: test_nested_dict_with_various_keys
    class Keys(LLMDataModel):
        int_dict: dict[int, str]
        float_dict: dict[float, int]
        tuple_dict: dict[tuple[str, int], bool]
        nested: dict[str, dict[int, float]]

    example = Keys.generate_example_json(Keys)
    assert example["int_dict"] == {123: "example_string"}
    assert example["float_dict"] == {123.45: 123}
    assert example["tuple_dict"][("example_string", 123)] is True
    assert example["nested"]["example_string"][123] == 123.45


def test_example_with_int_keys_survives_json_but_tuple_keys_do_not() -> None:
    # comprehensive: test_dict_json_serialization_with_non_string_keys
    example = build_dynamic_llm_datamodel(dict[int, str]).generate_example_json()
    assert 123 in example["value"]
    round_trip = json.loads(json.dumps(example))["value"]
    assert "123" in round_trip or 123 in round_trip
    pairs = build_dynamic_llm_datamodel(dict[tuple[str, int], str]).generate_example_json()
    assert ("example_string", 123) in pairs["value"]
    with pytest.raises(TypeError, match="keys must be str"):
        json.dumps(pairs)


def test_instructions_for_a_dict_with_int_keys() -> None:
    # comprehensive: test_instruct_llm_with_dict_int_keys
    text = build_dynamic_llm_datamodel(dict[int, str]).instruct_llm()
    assert "[[Schema]]" in text
    assert "object" in text.lower() or "dict" in text.lower()


def test_str_of_a_hundred_generations() -> None:
    # comprehensive: test_overly_deep_recursion
    top = Family(name="root")
    for level in range(100):
        top = Family(name=f"level_{level}", children=[top])
    assert str(top)
    schema = Family.simplify_json_schema()
    assert "recursive" in schema.lower() or "children" in schema


def test_str_of_two_models_in_each_others_lists() -> None:
    # comprehensive: test_circular_reference_detection
    first, second = Family(name="node1"), Family(name="node2")
    first.children = [second]
    second.children = [first]
    assert "node1" in str(first)


def test_an_unknown_status_is_rejected_and_named() -> None:
    # comprehensive: test_invalid_enum_value_rejection
    with pytest.raises(ValidationError) as caught:
        Coded(status="invalid_status", code=123)  # type: ignore[arg-type]
    message = str(caught.value).lower()
    assert "status" in message or "invalid" in message


@pytest.mark.parametrize("values", [
    {"name": "a" * 100, "age": 25, "email": "test@example.com"},
    {"name": "John", "age": 200, "email": "test@example.com"},
    {"name": "John", "age": 25, "email": "not_an_email"},
], ids=["too-long-name", "too-old", "not-an-email"])
def test_field_constraints_are_enforced(values: dict[str, Any]) -> None:
    # comprehensive: test_constraint_violations
    with pytest.raises(ValidationError):
        Bounded(**values)


def test_a_missing_field_is_named() -> None:
    # comprehensive: test_missing_required_fields
    with pytest.raises(ValidationError) as caught:
        OneText()  # type: ignore[call-arg]
    assert "value" in str(caught.value) or "required" in str(caught.value).lower()


def test_extra_fields_are_refused_when_forbidden() -> None:
    # comprehensive: test_extra_fields_rejection
    class Closed(LLMDataModel):
        model_config = {"extra": "forbid"}
        allowed_field: str

    with pytest.raises(ValidationError):
        Closed(allowed_field="value", extra_field="not_allowed")  # type: ignore[call-arg]


def test_str_has_names_values_and_indentation() -> None:
    # comprehensive: test_format_output_structural_properties
    text = str(Nesting(level1="test", nested=Nesting(level1="nested")))
    rows = text.split("\n")
    assert any(":" in row for row in rows)
    assert "test" in text and "nested" in text
    assert any(row.startswith(" ") for row in rows if row.strip()) or len(rows) == 1


# =========================================================================================
# tests/contract/test_llmdatamodel_integration.py
# =========================================================================================

class HttpReply(LLMDataModel):
    status_code: int
    headers: dict[str, str]
    body: dict[str, Any]
    timestamp: str
    request_id: str | None = None


class Preferences(LLMDataModel):
    theme: str = "light"
    language: str = "en"
    notifications_enabled: bool = True
    privacy_level: str = "public"
    timezone: str = "UTC"


class Profile(LLMDataModel):
    platform: str
    url: str
    verified: bool = False


class UserRecord(LLMDataModel):
    user_id: str
    username: str
    email: str
    full_name: str | None
    bio: str | None
    avatar_url: str | None
    verified: bool = False
    created_at: str
    settings: Preferences
    social_links: list[Profile]
    metadata: dict[str, Any]


class DbSettings(LLMDataModel):
    host: str
    port: int
    database: str
    username: str
    password: str | None = None
    ssl_enabled: bool = False
    pool_size: int = 10
    timeout: int = 30
    options: dict[str, str | int | bool] = None  # type: ignore[assignment]


class Event(LLMDataModel):
    event_id: str
    event_type: str
    timestamp: str
    user_id: str | None
    session_id: str | None
    payload: dict[str, Any]
    metadata: dict[str, str | int | float | bool]
    tags: list[str]
    severity: str = "info"


class Training(LLMDataModel):
    batch_size: int
    learning_rate: float
    epochs: int
    optimizer: str
    loss_function: str
    early_stopping: bool = True
    checkpoint_interval: int = 10


class Inference(LLMDataModel):
    batch_size: int = 1
    max_sequence_length: int = 512
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None


class ModelCard(LLMDataModel):
    model_name: str
    version: str
    architecture: str
    hyperparameters: dict[str, float | int | str]
    training_config: Training
    inference_config: Inference
    metrics: dict[str, float]


class GqlRequest(LLMDataModel):
    query: str
    variables: dict[str, Any] | None = None
    operation_name: str | None = None


class GqlReply(LLMDataModel):
    data: dict[str, Any] | None
    errors: list[dict[str, Any]] | None = None
    extensions: dict[str, Any] | None = None


def test_str_and_schema_of_an_http_reply() -> None:
    # integration: test_api_response_with_nested_data
    reply = HttpReply(
        status_code=200, headers={"Content-Type": "application/json", "X-Request-ID": "abc123"},
        body={"users": [{"id": 1, "name": "Alice"}, {"id": 2, "name": "Bob"}], "total": 2,
              "page": 1},
        timestamp="2024-01-01T00:00:00Z", request_id="req_123")
    text = str(reply)
    assert "status_code: 200" in text and "Content-Type: application/json" in text
    assert "users:" in text
    schema = HttpReply.simplify_json_schema()
    assert "status_code" in schema and "integer" in schema


def test_str_and_instructions_of_a_user_record() -> None:
    # integration: test_user_profile_complete_workflow
    record = UserRecord(
        user_id="user_123", username="johndoe", email="john@example.com", full_name="John Doe",
        bio="Software engineer and open source enthusiast",
        avatar_url="https://example.com/avatar.jpg", verified=True,
        created_at="2023-01-01T00:00:00Z",
        settings=Preferences(theme="dark", language="en", notifications_enabled=True,
                             privacy_level="friends", timezone="America/New_York"),
        social_links=[Profile(platform="github", url="https://github.com/johndoe", verified=True),
                      Profile(platform="twitter", url="https://twitter.com/johndoe")],
        metadata={"last_login": "2024-01-01", "posts_count": 42})
    text = str(record)
    assert "johndoe" in text and "theme: dark" in text and "platform: github" in text
    instructions = UserRecord.instruct_llm()
    assert "[[Result]]" in instructions and "user_id" in instructions


class CheckedDb(DbSettings):
    def validate(self) -> str | None:  # type: ignore[override]
        if not 1 <= self.port <= 65535:
            return f"Invalid port number: {self.port}"
        if self.pool_size < 1:
            return f"Pool size must be positive: {self.pool_size}"
        return f"Timeout must be positive: {self.timeout}" if self.timeout < 1 else None

    def remedy(self) -> str | None:
        if not 1 <= self.port <= 65535:
            return "Use a port number between 1 and 65535"
        if self.pool_size < 1:
            return "Set pool_size to at least 1"
        return "Set timeout to at least 1 second" if self.timeout < 1 else None


def test_custom_validate_and_remedy_of_a_database_config() -> None:
    # integration: test_database_config_with_validation
    good = CheckedDb(host="localhost", port=5432, database="myapp", username="dbuser",
                     ssl_enabled=True, pool_size=20, timeout=60)
    assert good.validate() is None and good.remedy() is None
    bad = CheckedDb(host="localhost", port=70000, database="myapp", username="dbuser",
                    pool_size=0, timeout=0)
    assert "Invalid port number" in (bad.validate() or "")
    assert "port number between" in (bad.remedy() or "")


def test_str_of_event_logs() -> None:
    # integration: test_event_log_aggregation
    events = [Event(event_id=f"evt_{n}", event_type="user_action" if n % 2 == 0 else "system_event",
                    timestamp=f"2024-01-01T{n:02d}:00:00Z",
                    user_id=f"user_{n % 3}" if n % 2 == 0 else None, session_id=f"session_{n // 5}",
                    payload={"action": f"action_{n}", "details": {"count": n}},
                    metadata={"latency_ms": n * 10.5, "success": n % 3 != 0},
                    tags=[f"tag_{n % 2}", f"category_{n % 3}"],
                    severity="info" if n < 5 else "warning")
              for n in range(10)]
    for event in events[:3]:
        text = str(event)
        assert "event_id:" in text and "event_type:" in text and "payload:" in text


def test_str_and_example_of_a_model_card() -> None:
    # integration: test_ml_model_config_serialization
    card = ModelCard(
        model_name="text-classifier-v2", version="2.1.0", architecture="transformer",
        hyperparameters={"hidden_size": 768, "num_layers": 12, "num_heads": 12, "dropout": 0.1,
                         "activation": "gelu"},
        training_config=Training(batch_size=32, learning_rate=0.0001, epochs=100,
                                 optimizer="adamw", loss_function="cross_entropy",
                                 early_stopping=True, checkpoint_interval=5),
        inference_config=Inference(batch_size=8, max_sequence_length=256, temperature=0.7,
                                   top_k=50, top_p=0.95),
        metrics={"accuracy": 0.94, "precision": 0.92, "recall": 0.93, "f1_score": 0.925})
    text = str(card)
    for line in ("model_name: text-classifier-v2", "learning_rate: 0.0001", "temperature: 0.7",
                 "accuracy: 0.94"):
        assert line in text
    example = LLMDataModel.generate_example_json(ModelCard)
    assert {"hyperparameters", "training_config", "inference_config"} <= example.keys()


def test_str_of_a_graphql_request_and_reply() -> None:
    # integration: test_graphql_query_response_cycle
    request = GqlRequest(query="query GetUser($id: ID!) { user(id: $id) { id name email "
                               "posts { id title } } }",
                         variables={"id": "123"}, operation_name="GetUser")
    reply = GqlReply(data={"user": {"id": "123", "name": "Alice", "email": "alice@example.com",
                                    "posts": [{"id": "1", "title": "First Post"},
                                              {"id": "2", "title": "Second Post"}]}},
                     errors=None, extensions={"tracing": {"duration": 45}})
    request_text = str(request)
    assert "query:" in request_text and "variables:" in request_text
    reply_text = str(reply)
    assert "Alice" in reply_text and "First Post" in reply_text


@pytest.mark.parametrize("annotation", [
    list[dict[str, str | int]],
    dict[str, list[str]],
    dict[str, dict[str, Any]],
    list[str] | dict[str, str] | None,
])
def test_examples_and_instructions_of_dynamic_reply_types(annotation: Any) -> None:
    # integration: test_dynamic_api_response_parsing
    wrapped = build_dynamic_llm_datamodel(annotation)
    assert "value" in LLMDataModel.generate_example_json(wrapped)
    assert "[[Result]]" in wrapped.instruct_llm()


def test_str_of_a_service_configuration() -> None:
    # integration: test_complex_nested_configuration
    class Endpoint(LLMDataModel):
        path: str
        methods: list[str]
        auth_required: bool
        rate_limit: int | None

    class Dependency(LLMDataModel):
        url: str
        timeout: int
        retry_count: int
        circuit_breaker_enabled: bool

    class Probe(LLMDataModel):
        name: str
        endpoint: str
        interval: int
        timeout: int
        failure_threshold: int

    class Service(LLMDataModel):
        name: str
        endpoints: list[Endpoint]
        dependencies: dict[str, Dependency]
        health_checks: list[Probe]

    service = Service(
        name="user-service",
        endpoints=[Endpoint(path="/users", methods=["GET", "POST"], auth_required=True,
                            rate_limit=100),
                   Endpoint(path="/users/{id}", methods=["GET", "PUT", "DELETE"],
                            auth_required=True, rate_limit=50)],
        dependencies={"auth": Dependency(url="http://auth-service", timeout=5, retry_count=3,
                                         circuit_breaker_enabled=True),
                      "database": Dependency(url="postgresql://db:5432", timeout=30,
                                             retry_count=1, circuit_breaker_enabled=False)},
        health_checks=[Probe(name="liveness", endpoint="/health/live", interval=10, timeout=5,
                             failure_threshold=3)])
    text = str(service)
    assert all(part in text for part in ("user-service", "/users", "auth:", "liveness"))


def test_moving_a_record_to_a_new_model_version() -> None:
    # integration: test_data_migration_scenario
    class Before(LLMDataModel):
        id: int
        name: str
        email: str

    class After(LLMDataModel):
        id: int
        first_name: str
        last_name: str
        email: str
        created_at: str | None = None

    old = Before(id=1, name="John Doe", email="john@example.com")
    first, _, last = old.name.partition(" ")
    new = After(id=old.id, first_name=first, last_name=last, email=old.email,
                created_at=datetime.now(UTC).isoformat())
    assert (new.first_name, new.last_name, new.email) == ("John", "Doe", "john@example.com")


def test_str_of_an_error_reply_with_details() -> None:
    # integration: test_error_response_modeling
    class Problem(LLMDataModel):
        field: str | None
        message: str
        code: str | None = None

    class Failure(LLMDataModel):
        error: str
        message: str
        details: list[Problem] | None = None
        request_id: str | None = None
        timestamp: str

    failure = Failure(
        error="ValidationError", message="Invalid input data",
        details=[Problem(field="email", message="Invalid email format", code="INVALID_EMAIL"),
                 Problem(field="age", message="Must be a positive integer", code="INVALID_AGE")],
        request_id="req_abc123", timestamp="2024-01-01T00:00:00Z")
    text = str(failure)
    assert all(part in text for part in ("ValidationError", "Invalid email format",
                                         "INVALID_EMAIL"))


def test_str_of_a_batch_request_and_its_result() -> None:
    # integration: test_batch_processing_scenario
    class Job(LLMDataModel):
        id: str
        data: dict[str, Any]
        priority: int = 0

    class JobBatch(LLMDataModel):
        batch_id: str
        items: list[Job]
        options: dict[str, Any]

    class JobOutcome(LLMDataModel):
        item_id: str
        success: bool
        result: Any | None = None
        error: str | None = None

    class BatchSummary(LLMDataModel):
        batch_id: str
        processed: int
        failed: int
        results: list[JobOutcome]
        duration_ms: float

    batch = JobBatch(batch_id="batch_001",
                     items=[Job(id=f"item_{n}", data={"value": n}, priority=n % 3)
                            for n in range(5)],
                     options={"parallel": True, "timeout": 60})
    summary = BatchSummary(batch_id="batch_001", processed=5, failed=0, duration_ms=1234.56,
                           results=[JobOutcome(item_id=f"item_{n}", success=True,
                                               result={"processed": n}) for n in range(5)])
    batch_text = str(batch)
    assert "batch_001" in batch_text and "item_0" in batch_text
    summary_text = str(summary)
    assert "processed: 5" in summary_text and "duration_ms: 1234.56" in summary_text


def test_str_of_a_batch_of_stream_messages() -> None:
    # integration: test_streaming_data_model
    class Message(LLMDataModel):
        message_id: str
        stream_id: str
        partition: int
        offset: int
        timestamp: str
        key: str | None
        value: dict[str, Any]
        headers: dict[str, str] | None = None

    class Chunk(LLMDataModel):
        stream_id: str
        messages: list[Message]
        start_offset: int
        end_offset: int
        partition: int

    messages = [Message(message_id=f"msg_{n}", stream_id="stream_001", partition=0, offset=n,
                        timestamp=f"2024-01-01T00:00:{n:02d}Z",
                        key=f"key_{n % 3}" if n % 2 == 0 else None,
                        value={"event": f"event_{n}", "data": n},
                        headers={"source": "test"} if n % 3 == 0 else None)
                for n in range(10)]
    text = str(Chunk(stream_id="stream_001", messages=messages, start_offset=0, end_offset=9,
                     partition=0))
    assert "stream_001" in text and "msg_0" in text and "end_offset: 9" in text


def test_str_of_a_multi_tenant_system() -> None:
    # integration: test_multi_tenant_configuration
    class Tenant(LLMDataModel):
        tenant_id: str
        name: str
        features: dict[str, bool]
        limits: dict[str, int]
        custom_settings: dict[str, Any]

    class Tenancy(LLMDataModel):
        tenants: dict[str, Tenant]
        default_features: dict[str, bool]
        global_limits: dict[str, int]

    system = Tenancy(
        tenants={"tenant_a": Tenant(tenant_id="tenant_a", name="Company A",
                                    features={"feature1": True, "feature2": False},
                                    limits={"users": 100, "storage_gb": 50},
                                    custom_settings={"theme": "blue"}),
                 "tenant_b": Tenant(tenant_id="tenant_b", name="Company B",
                                    features={"feature1": True, "feature2": True},
                                    limits={"users": 500, "storage_gb": 200},
                                    custom_settings={"theme": "green",
                                                     "logo_url": "https://example.com/logo.png"})},
        default_features={"feature1": True, "feature2": False, "feature3": False},
        global_limits={"max_tenants": 1000, "max_users_per_tenant": 10000})
    text = str(system)
    assert all(part in text for part in ("Company A", "Company B", "feature1: True",
                                         "storage_gb: 50"))


@pytest.mark.parametrize("values", [
    pytest.param(dict(host="db.example.com", port=-1, database="test_db", user="admin",
                      password="secret", pool_size=10, timeout=30, ssl_enabled=True,
                      retry_config={"max_retries": 3, "backoff": 2}), id="negative-port"),
    pytest.param(dict(host="", port=5432, database="test_db", user="admin", password="secret",
                      pool_size=10, timeout=30, ssl_enabled=True,
                      retry_config={"max_retries": 3, "backoff": 2}), id="empty-host"),
])
def test_database_configs_without_a_username_are_rejected(values: dict[str, Any]) -> None:
    # integration: test_database_config_invalid_values (``user=`` is no field: the required
    # ``username`` is missing)
    with pytest.raises(ValidationError):
        DbSettings(**values)


def test_a_model_card_with_incomplete_parts_is_rejected() -> None:
    # integration: test_ml_model_config_invalid_hyperparameters
    with pytest.raises(ValidationError):
        ModelCard(
            model_type="neural_network", version="1.0.0",  # type: ignore[call-arg]
            hyperparameters={"learning_rate": "not_a_number", "batch_size": 32, "epochs": 100},
            training_config=Training(batch_size=32, learning_rate=0.001, epochs=100,  # type: ignore[call-arg]
                                     validation_split=0.2, early_stopping=True,
                                     metrics=["accuracy", "loss"]),
            inference_config=Inference(batch_size=1, timeout_ms=1000, max_retries=3,  # type: ignore[call-arg]
                                       cache_predictions=True))


def test_an_event_without_an_id_is_rejected() -> None:
    # integration: test_event_log_missing_required_fields
    with pytest.raises(ValidationError):
        Event(timestamp="2024-01-01T10:00:00Z", event_type="user_action",  # type: ignore[call-arg]
              user_id="user123", metadata={"action": "click"}, severity="info", source="web",
              tags=["ui", "interaction"])


def test_graphql_values_of_the_wrong_types_are_rejected() -> None:
    # integration: test_graphql_invalid_query_structure
    with pytest.raises(ValidationError):
        GqlRequest(query=123, variables={"id": "123"}, operation_name="GetUser")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        GqlReply(data={"user": {"id": "123"}}, errors="not_a_list",  # type: ignore[arg-type]
                 extensions={})


def test_a_user_record_with_a_string_for_its_settings_is_rejected() -> None:
    # integration: test_user_profile_invalid_nested_structure
    with pytest.raises(ValidationError):
        UserRecord(user_id="user123", username="john_doe", email="invalid_email",  # type: ignore[call-arg]
                   created_at="2024-01-01T00:00:00Z", last_login="2024-01-15T10:30:00Z",
                   profile={"first_name": "John", "last_name": "Doe",
                            "bio": "Software developer", "avatar_url": "not_a_url"},
                   settings="not_a_settings_object", permissions=["read", "write"],
                   metadata={"login_count": 42})


def test_str_and_schema_of_a_tree_whose_child_holds_the_root() -> None:
    # integration: test_circular_reference_handling_in_complex_models
    class TreeNode(LLMDataModel):
        id: str
        data: dict[str, Any]
        children: list[TreeNode] = Field(default_factory=list)
        parent: TreeNode | None = None

    root = TreeNode(id="root", data={"value": 1})
    first = TreeNode(id="child1", data={"value": 2}, parent=root)
    root.children = [first, TreeNode(id="child2", data={"value": 3}, parent=root)]
    first.children = [root]
    text = str(root)
    assert "root" in text and "child1" in text
    schema = TreeNode.simplify_json_schema()
    assert "recursive" in schema.lower() or "children" in schema


def test_str_of_a_hundred_replies_deep_thread() -> None:
    # integration: test_excessive_nesting_in_real_scenario
    class Comment(LLMDataModel):
        id: str
        text: str
        replies: list[Comment] = Field(default_factory=list)

    thread = Comment(id="base", text="Base comment")
    for level in range(100):
        thread = Comment(id=f"reply_{level}", text=f"Reply level {level}", replies=[thread])
    text = str(thread)
    assert text and "Reply level" in text


def test_an_int_matches_no_branch_of_dict_list_str_or_none() -> None:
    # integration: test_union_validation_failures_in_api_response
    wrapped = build_dynamic_llm_datamodel(dict[str, Any] | list[Any] | str | None)
    for fine in ({"key": "value"}, [1, 2, 3], "string", None):
        wrapped(value=fine)
    with pytest.raises(ValidationError):
        wrapped(value=123)


def test_a_batch_with_one_malformed_item_is_rejected() -> None:
    # integration: test_batch_processing_with_invalid_items
    class Item(LLMDataModel):
        id: str
        data: dict[str, Any]
        validate_strict: bool = True

    class Items(LLMDataModel):
        items: list[Item]
        batch_id: str

    with pytest.raises(ValidationError):
        Items(batch_id="batch_001", items=[Item(id="1", data={"valid": "data"}),
                                           {"id": "2", "data": "not_a_dict"},  # type: ignore[list-item]
                                           Item(id="3", data={"valid": "data"})])


def test_examples_of_a_user_record_have_the_same_shape_twice() -> None:
    # integration: test_example_generation_deterministic
    first = LLMDataModel.generate_example_json(UserRecord)
    second = LLMDataModel.generate_example_json(UserRecord)
    assert first.keys() == second.keys()
    if isinstance(first["settings"], dict) and isinstance(second["settings"], dict):
        assert first["settings"].keys() == second["settings"].keys()
    else:
        assert first["settings"] == second["settings"]


# =========================================================================================
# tests/contract/test_llmdatamodel_negative_paths.py
# =========================================================================================

def test_bytes_longer_than_their_limit_are_rejected() -> None:
    # negative_paths: test_bytes_with_invalid_length_constraint
    class Short(LLMDataModel):
        data: bytes = Field(..., max_length=10)

    assert Short(data=b"short").data == b"short"
    with pytest.raises(ValidationError, match="data"):
        Short(data=b"this is way too long for the constraint")


def test_a_negative_minimum_length_fails_at_class_definition() -> None:
    # negative_paths: test_bytes_with_negative_length
    with pytest.raises((ValueError, SchemaError)):
        class Impossible(LLMDataModel):
            data: bytes = Field(..., min_length=-1)


def test_str_of_bytes_that_are_not_utf8() -> None:
    # negative_paths: test_bytes_non_utf8_sequences
    class Raw(LLMDataModel):
        data: bytes

    raw = Raw(data=b"\x80\x81\x82\x83")
    assert raw.data == b"\x80\x81\x82\x83"
    assert "data:" in str(raw)


def test_a_bare_literal_cannot_be_wrapped() -> None:
    # negative_paths: test_empty_literal
    with pytest.raises(PydanticSchemaGenerationError):
        build_dynamic_llm_datamodel(Literal)


def test_literal_of_mixed_types() -> None:
    # negative_paths: test_literal_with_mixed_types
    class Mixed(LLMDataModel):
        value: Literal[1, "two", 3.0, True]

    for allowed in (1, "two", 3.0, True):
        assert Mixed(value=allowed).value == allowed
    with pytest.raises(ValidationError):
        Mixed(value="three")  # type: ignore[arg-type]


def test_literal_of_a_list_either_works_or_fails_cleanly() -> None:
    # negative_paths: test_literal_with_mutable_types
    try:
        list_literal = Literal[["list"]]  # type: ignore[valid-type]
        Literal[{"dict": "value"}]  # type: ignore[valid-type]

        class ListLiteral(LLMDataModel):
            value: list_literal  # type: ignore[valid-type]

        assert ListLiteral(value=["list"]).value == ["list"]
    except (TypeError, ValidationError):
        pass


def test_literal_with_none() -> None:
    # negative_paths: test_literal_with_none
    class NoneOrSomething(LLMDataModel):
        value: Literal[None, "something"]

    assert NoneOrSomething(value=None).value is None
    assert NoneOrSomething(value="something").value == "something"
    with pytest.raises(ValidationError):
        NoneOrSomething(value="other")  # type: ignore[arg-type]


Wide = Union[  # noqa: UP007
    int, str, float, bool, bytes, list[int], list[str], list[float], dict[str, int],
    dict[int, str], dict[str, str], tuple[int, ...], tuple[str, str], tuple[float, int, str],
    set[int], set[str], frozenset[int], None]


class WideHolder(LLMDataModel):
    value: Wide  # type: ignore[valid-type]


@pytest.mark.parametrize("value", [
    42, "text", 3.14, True, b"bytes", [1, 2], ["a", "b"], [1.0, 2.0], {"a": 1}, {1: "a"},
    {"x": "y"}, (1, 2, 3), ("a", "b"), (1.0, 2, "c"), {1, 2}, {"a", "b"}, frozenset([1, 2]),
    None])
def test_str_and_example_of_an_eighteen_way_union(value: object) -> None:
    # negative_paths: test_extremely_wide_union
    holder = WideHolder(value=value)
    str(holder)
    holder.generate_example_json()


def test_union_nested_in_a_union() -> None:
    # negative_paths: test_deeply_nested_union
    class Scalars(LLMDataModel):
        value: Union[int, str | float | bool | bytes]  # noqa: UP007

    for allowed in (42, "text", 3.14, True, b"bytes"):
        assert Scalars(value=allowed).value == allowed
    with pytest.raises(ValidationError):
        Scalars(value=[1, 2, 3])  # type: ignore[arg-type]


def test_field_validator_on_a_union() -> None:
    # negative_paths: test_union_with_conflicting_constraints
    class ShortTextOrLongList(LLMDataModel):
        value: str | list[int]

        @field_validator("value")
        @classmethod
        def _sizes(cls, value: str | list[int]) -> str | list[int]:
            if isinstance(value, str) and len(value) > 5:
                raise ValueError("String too long")
            if isinstance(value, list) and len(value) < 3:
                raise ValueError("List too short")
            return value

    ShortTextOrLongList(value="short")
    ShortTextOrLongList(value=[1, 2, 3, 4])
    for bad in ("too long string", [1]):
        with pytest.raises(ValidationError):
            ShortTextOrLongList(value=bad)


class Alpha(LLMDataModel):
    name: str
    b_ref: Beta | None = None


class Beta(LLMDataModel):
    name: str
    a_ref: Alpha | None = None


def test_str_of_two_models_referring_to_each_other() -> None:
    # negative_paths: test_mutual_recursion_limit
    alpha = Alpha(name="A")
    alpha.b_ref = Beta(name="B", a_ref=alpha)
    text = str(alpha)
    assert "A" in text and "B" in text
    assert "<circular reference>" in text or "<max depth reached>" in text


def test_str_of_a_cycle_through_a_list_is_marked() -> None:
    # negative_paths: test_self_referential_list
    class Step(LLMDataModel):
        value: int
        next_nodes: list[Step] = Field(default_factory=list)

    first = Step(value=1)
    first.next_nodes.append(Step(value=2, next_nodes=[first]))
    assert "<circular reference>" in str(first)


def test_str_shows_the_python_names_of_keyword_fields() -> None:
    # negative_paths: test_field_names_with_python_keywords
    class Keywords(LLMDataModel):
        class_: str = Field(alias="class")
        return_: int = Field(alias="return")
        yield_: float = Field(alias="yield")

    text = str(Keywords(**{"class": "test", "return": 42, "yield": 3.14}))
    assert "class_" in text and "return_" in text and "yield_" in text


def test_str_of_fields_with_non_ascii_aliases() -> None:
    # negative_paths: test_field_names_with_special_unicode
    class Scripts(LLMDataModel):
        emoji_field: str = Field(default="happy", alias="emoji_😀")
        chinese_field: int = Field(default=42, alias="chinese_字段")
        arabic_field: float = Field(default=3.14, alias="arabic_حقل")

    text = str(Scripts())
    assert "happy" in text and "42" in text and "3.14" in text


def test_str_of_a_value_with_a_null_byte() -> None:
    # negative_paths: test_field_with_null_bytes
    class Text(LLMDataModel):
        text: str

    holder = Text(text="hello\x00world")
    assert holder.text == "hello\x00world"
    assert "text:" in str(holder)


def test_a_bare_list_takes_anything() -> None:
    # negative_paths: test_invalid_generic_without_args
    class Bag(LLMDataModel):
        items: list

    assert len(Bag(items=[1, "mixed", 3.14]).items) == 3


@pytest.mark.parametrize("value", [
    42, "string", 3.14, True, None, [1, 2, 3], {"key": "value"}, object(), lambda x: x, type,
    Exception("test")])
def test_str_of_an_any_field(value: object) -> None:
    # negative_paths: test_any_type_validation
    class Anything(LLMDataModel):
        anything: Any

    str(Anything(anything=value))


def test_schema_text_of_an_unresolvable_reference() -> None:
    # negative_paths: test_forward_reference_not_resolvable
    class Dangling(LLMDataModel):
        bad_ref: NonExistentModel = None  # type: ignore[name-defined]  # noqa: F821

    try:
        text = Dangling.simplify_json_schema()
    except Exception:  # a clear error is acceptable too
        return
    assert "NonExistentModel" in text or "any" in text.lower()


def test_contradicting_bounds_reject_every_value() -> None:
    # negative_paths: test_conflicting_constraints
    class Contradiction(LLMDataModel):
        value: int = Field(ge=100, le=50)

    with pytest.raises(ValidationError):
        Contradiction(value=75)


def test_bounds_on_an_optional_field() -> None:
    # negative_paths: test_constraint_on_optional_field
    class Percent(LLMDataModel):
        value: int | None = Field(None, ge=0, le=100)

    assert Percent(value=None).value is None
    assert Percent(value=50).value == 50
    with pytest.raises(ValidationError):
        Percent(value=150)


def test_pattern_with_escaped_special_characters() -> None:
    # negative_paths: test_regex_constraint_with_special_chars
    class Patterned(LLMDataModel):
        pattern: str = Field(..., pattern=r"^[a-z]{3}\.[0-9]+\$$")

    assert Patterned(pattern="abc.123$").pattern == "abc.123$"
    for bad in ("ABC.123$", "abc.123"):
        with pytest.raises(ValidationError):
            Patterned(pattern=bad)


def test_str_of_a_dict_that_contains_itself() -> None:
    # negative_paths: test_circular_reference_in_dict
    class Loose(LLMDataModel):
        data: dict

    looping: dict[str, Any] = {"key": "value"}
    looping["self"] = looping
    assert "<circular reference>" in str(Loose(data=looping))


@pytest.mark.parametrize("annotation", [type(None), ...])
def test_wrapping_none_or_ellipsis_works_or_fails_cleanly(annotation: Any) -> None:
    # negative_paths: test_build_dynamic_with_invalid_type
    try:
        wrapped = build_dynamic_llm_datamodel(annotation)
    except (TypeError, ValueError):
        return
    assert "value" in wrapped.generate_example_json()


def test_example_of_a_dict_of_lists_of_dicts_of_sets_of_tuples() -> None:
    # negative_paths: test_build_dynamic_with_complex_nested
    try:
        wrapped = build_dynamic_llm_datamodel(dict[str, list[dict[int, set[tuple[str, int]]]]])
        example = wrapped.generate_example_json()
    except Exception:  # SymbolicAI's test tolerates an unsupported type
        return
    assert isinstance(example["value"], dict)


def test_str_of_ten_thousand_items() -> None:
    # negative_paths: test_extremely_large_list
    class Numbers(LLMDataModel):
        items: list[int]

    numbers = Numbers(items=list(range(10_000)))
    assert "items:" in str(numbers) and len(numbers.items) == 10_000


def test_str_of_a_hundred_nested_dicts_is_cut() -> None:
    # negative_paths: test_deeply_nested_structure
    class Loose(LLMDataModel):
        data: dict

    root: dict[str, Any] = {"level": 0}
    tip = root
    for level in range(1, 101):
        tip["next"] = {"level": level}
        tip = tip["next"]
    assert "<max depth reached>" in str(Loose(data=root))


def test_example_of_a_none_field() -> None:
    # negative_paths: test_generate_example_with_empty_union
    class Nothing(LLMDataModel):
        value: None

    assert Nothing.generate_example_json()["value"] is None


def test_example_of_a_recursive_model_ends() -> None:
    # negative_paths: test_generate_example_with_recursive_limit
    class Branch(LLMDataModel):
        name: str
        children: list[Branch] = Field(default_factory=list)

    example = Branch.generate_example_json()
    assert "name" in example and isinstance(example["children"], list)


def test_schema_text_and_validator_of_an_even_number() -> None:
    # negative_paths: test_schema_with_custom_validation
    class Even(LLMDataModel):
        value: int

        @field_validator("value")
        @classmethod
        def _even(cls, value: int) -> int:
            if value % 2:
                raise ValueError("must be even")
            return value

    assert "value" in Even.simplify_json_schema()
    Even(value=2)
    with pytest.raises(ValidationError):
        Even(value=3)


def test_schema_text_of_a_model_with_two_bases() -> None:
    # negative_paths: test_schema_with_complex_inheritance
    class First(LLMDataModel):
        field1: str

    class Second(LLMDataModel):
        field2: int

    class Both(First, Second):
        field3: float

    text = Both.simplify_json_schema()
    assert all(name in text for name in ("field1", "field2", "field3"))


def test_errors_name_the_field_and_the_bound() -> None:
    # negative_paths: test_helpful_error_messages
    class Limits(LLMDataModel):
        name: str = Field(..., min_length=3, max_length=10)
        age: int = Field(..., ge=0, le=120)

    with pytest.raises(ValidationError) as caught:
        Limits(name="ab", age=25)
    message = str(caught.value)
    assert "name" in message
    assert "at least 3" in message.lower() or "min" in message.lower()
    with pytest.raises(ValidationError) as caught:
        Limits(name="valid", age=150)
    message = str(caught.value)
    assert "age" in message and ("120" in message or "less than" in message.lower())


# =========================================================================================
# Tests several upstream files repeat, as tables
# =========================================================================================

@pytest.mark.parametrize(("fields", "given", "expected"), [
    pytest.param({"int_dict": (dict[int, str], ...),
                  "mixed_dict": (dict[int, dict[str, int]], ...)},
                 {"int_dict": {"1": "value1", "2": "value2"}, "mixed_dict": {"3": {"nested": 4}}},
                 {"int_dict": {1: "value1", 2: "value2"}, "mixed_dict": {3: {"nested": 4}}},
                 id="basic-test_convert_dict_int_keys_from_json"),
    pytest.param({"data": (dict[int, str], ...)},
                 {"data": {"1": "value1", "2": "value2", "3": "value3"}},
                 {"data": {1: "value1", 2: "value2", 3: "value3"}},
                 id="advanced-test_convert_dict_int_keys_basic"),
    pytest.param({"outer": (dict[int, dict[str, int]], ...)},
                 {"outer": {"1": {"inner": 42}, "2": {"inner": 84}}},
                 {"outer": {1: {"inner": 42}, 2: {"inner": 84}}},
                 id="advanced-test_convert_dict_int_keys_nested"),
    pytest.param({"int_keys": (dict[int, str], ...), "str_keys": (dict[str, int], ...)},
                 {"int_keys": {"1": "a", "2": "b"}, "str_keys": {"key1": 1, "key2": 2}},
                 {"int_keys": {1: "a", 2: "b"}, "str_keys": {"key1": 1, "key2": 2}},
                 id="advanced-test_convert_dict_int_keys_mixed_valid"),
    pytest.param({"data": (dict[int, str], ...)},
                 json.loads('{"data": {"1": "one", "2": "two", "3": "three"}}'),
                 {"data": {1: "one", 2: "two", 3: "three"}},
                 id="comprehensive-test_convert_dict_int_keys_from_json_string"),
    pytest.param({"outer": (dict[int, dict[int, str]], ...)},
                 {"outer": {"1": {"10": "value"}}}, {"outer": {1: {10: "value"}}},
                 id="comprehensive-test_convert_dict_int_keys_nested_dicts"),
    pytest.param({"data": (dict[int, str], ...)}, {"data": {1: "one", 2: "two"}},
                 {"data": {1: "one", 2: "two"}},
                 id="comprehensive-test_convert_dict_int_keys_preserves_valid_ints"),
    pytest.param({"hourly_stats": (dict[int, float], ...),
                  "daily_totals": (dict[int, dict[str, float]], ...)},
                 {"hourly_stats": {"0": 10.5, "12": 45.2, "23": 8.3},
                  "daily_totals": {"1": {"visits": 1000.0, "conversions": 50.0},
                                   "15": {"visits": 1500.0, "conversions": 75.0}}},
                 {"hourly_stats": {0: 10.5, 12: 45.2, 23: 8.3},
                  "daily_totals": {1: {"visits": 1000.0, "conversions": 50.0},
                                   15: {"visits": 1500.0, "conversions": 75.0}}},
                 id="integration-test_convert_dict_int_keys_in_complex_models"),
    pytest.param({"page_data": (dict[int, list[str]], ...), "total_pages": (int, ...)},
                 {"page_data": {"1": ["item1", "item2"], "2": ["item3", "item4"]},
                  "total_pages": 2},
                 {"page_data": {1: ["item1", "item2"], 2: ["item3", "item4"]}},
                 id="integration-test_convert_dict_int_keys_with_api_response"),
])
def test_numeric_string_keys_become_int_keys(fields: dict[str, Any], given: dict[str, Any],
                                             expected: dict[str, Any]) -> None:
    built = model_of("IntKeys", **fields)(**given)
    for name, value in expected.items():
        # "1" != 1: equal to the int-keyed expectation means the keys are ints
        assert getattr(built, name) == value
        assert [type(key) for key in getattr(built, name)] == [type(key) for key in value]


@pytest.mark.parametrize(("fields", "given", "named"), [
    pytest.param({"int_dict": (dict[int, str], ...),
                  "mixed_dict": (dict[int, dict[str, int]], ...)},
                 {"int_dict": {"not_a_number": "value"}, "mixed_dict": {1: {"nested": 2}}}, False,
                 id="basic-test_convert_dict_int_keys_invalid"),
    pytest.param({"data": (dict[int, str], ...)}, {"data": {"not_a_number": "value"}}, True,
                 id="advanced-test_convert_dict_int_keys_invalid_raises"),
    pytest.param({"nums": (dict[int, str], ...)}, {"nums": {"not_a_number": "value"}}, False,
                 id="comprehensive-test_convert_dict_int_keys_invalid_conversion-word"),
    pytest.param({"nums": (dict[int, str], ...)}, {"nums": {"1.5": "value"}}, False,
                 id="comprehensive-test_convert_dict_int_keys_invalid_conversion-fraction"),
    pytest.param({"int_keys": (dict[int, str], ...)}, {"int_keys": {"abc": "value"}}, False,
                 id="comprehensive-test_invalid_type_in_dict_keys"),
    pytest.param({"data": (dict[int, str], ...)}, {"data": {"not_numeric": "value"}}, True,
                 id="integration-test_convert_dict_int_keys_validation_error"),
])
def test_non_numeric_keys_of_int_keyed_dicts_are_rejected(
        fields: dict[str, Any], given: dict[str, Any], named: bool) -> None:
    with pytest.raises(ValidationError) as caught:
        model_of("IntKeys", **fields)(**given)
    if named:  # the error quotes the key, or says the input is invalid
        message = str(caught.value)
        (key,) = next(iter(given.values()))
        assert key in message or "invalid" in message.lower()


class Inner(LLMDataModel):
    value: str


@pytest.mark.parametrize(("model", "given"), [
    pytest.param(model_of("Ints", items=(list[int], ...)), {"items": [1, 2, "three", 4]},
                 id="comprehensive-test_invalid_type_in_list"),
    pytest.param(model_of("IntValues", mapping=(dict[str, int], ...)),
                 {"mapping": {"a": 1, "b": "not_an_int"}},
                 id="comprehensive-test_invalid_type_in_dict_values"),
    pytest.param(model_of("Scalar", value=(int | str | bool, ...)),
                 {"value": {"dict": "not_allowed"}},
                 id="comprehensive-test_union_type_validation_all_fail"),
    pytest.param(Inner, {"value": None}, id="comprehensive-test_none_in_non_optional_field"),
    pytest.param(model_of("Outer", inner=(Inner, ...)), {"inner": "not_a_model"},
                 id="comprehensive-test_wrong_type_in_nested_model-string"),
    pytest.param(model_of("Outer", inner=(Inner, ...)), {"inner": {"value": 123}},
                 id="comprehensive-test_wrong_type_in_nested_model-int-value"),
])
def test_values_of_the_wrong_type_are_rejected(model: type[LLMDataModel],
                                               given: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model(**given)


def make_db() -> DbSettings:
    return DbSettings(host="localhost", port=5432, database="test", username="user",
                      password="pass", pool_size=10, timeout=30, ssl_enabled=False,
                      retry_config={})  # type: ignore[call-arg]


@pytest.mark.parametrize(("first", "second"), [
    pytest.param(Account.simplify_json_schema, Account.simplify_json_schema,
                 id="basic-test_simplify_json_schema_caching"),
    pytest.param(lambda: Pair(name="test1", value=1).simplify_json_schema(),
                 lambda: Pair(name="test2", value=2).simplify_json_schema(),
                 id="advanced-test_schema_caching_across_instances"),
    pytest.param(OneText.simplify_json_schema, OneText.simplify_json_schema,
                 id="comprehensive-test_simplify_schema_caching"),
    pytest.param(OneText.instruct_llm, OneText.instruct_llm,
                 id="comprehensive-test_instruct_llm_caching"),
    pytest.param(lambda: (OneText.simplify_json_schema(), OneText.instruct_llm()),
                 lambda: (OneText.simplify_json_schema(), OneText.instruct_llm()),
                 id="comprehensive-test_cache_equality_not_identity"),
    pytest.param(lambda: (make_db().simplify_json_schema(), DbSettings.instruct_llm()),
                 lambda: (make_db().simplify_json_schema(), DbSettings.instruct_llm()),
                 id="integration-test_schema_caching_uses_equality"),
])
def test_repeated_calls_give_equal_text(first: Any, second: Any) -> None:
    assert first() == second()


_FLEXIBLE = re.compile(r"\[\[Example(?:\s+\d+)?\]\].*?```[pP]ython\s*(.*?)\s*```",
                       re.DOTALL | re.IGNORECASE)


@pytest.mark.parametrize("prompt", [
    pytest.param("[[Example]]\n```python\n{'value': 123}\n```",
                 id="advanced-test_example_extraction_resilience-plain"),
    pytest.param("[[Example 1]]\n```Python\n{'value': 123}\n```",
                 id="advanced-test_example_extraction_resilience-capital"),
    pytest.param("[[Example]]\n ```python\n{'value': 123}\n ```",
                 id="advanced-test_example_extraction_resilience-spaced"),
    pytest.param("[[Example]]\n```python\n{'value': 123}\n```",
                 id="comprehensive-test_example_extraction_flexible-plain"),
    pytest.param("[[Example 1]] \n ```python\n {'value': 123} \n ```",
                 id="comprehensive-test_example_extraction_flexible-padded"),
    pytest.param("[[Example]]\n\n```python\n{'value': 123}\n\n```",
                 id="comprehensive-test_example_extraction_flexible-blank-lines"),
])
def test_example_blocks_are_found_despite_fence_variations(prompt: str) -> None:
    # SymbolicAI's two tests check only their own regular expression on fixed strings
    found = _FLEXIBLE.findall(prompt)
    assert found and "123" in found[0]
