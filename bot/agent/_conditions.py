"""Rule conditions: CEL expressions on a proposed call, checked against the tool's input schema when an
admin saves them and evaluated by the runtime when the model proposes the call.

CEL comes from `cel-python` (`celpy`, pure Python; see the README's "Rules" for why). It parses and
evaluates but has no type checker, so `check_condition` walks the parsed tree itself: every name and
field is looked up in the variables below and in the tool's JSON schema, and the operands of each
operator must have types CEL can combine. A condition is at most `CONDITION_LIMIT` characters and
`NODE_LIMIT` parse nodes, with comprehensions nested at most `NESTING_LIMIT` deep: CEL has no loops
or recursion, so that bounds what one evaluation can cost on the event loop.

Variables: `args` (the call's arguments, typed by the input schema), `requester` (the Slack user ID of
whose message led to the call; "" when none), `channel` (the conversation's channel ID; "" outside
Slack), `tool` (the tool's name), `now` (a timestamp, UTC).
"""

from __future__ import annotations

import datetime
import json
import threading
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celtypes

from memory import PolicyError, RuleEffect, ToolRule

CONDITION_LIMIT = 500
"""The longest condition, in characters."""
NODE_LIMIT = 400
"""The most parse nodes a condition may have."""
NESTING_LIMIT = 1
"""How deep comprehensions (`all`, `exists`, `map`, `filter`) may nest: not at all, so one evaluation is
about linear in the size of the arguments."""
ARGS_LIMIT = 64_000
"""The most JSON characters of arguments a rule reads; a call with more fails safe (it needs approval)."""
LIST_LIMIT = 1000
"""The longest list in the arguments a rule reads; a call with a longer one fails safe."""
EVALUATION_TIMEOUT = 1.0
"""Seconds the rules of one call may take (evaluated off the event loop); longer: the call fails safe."""

VARIABLES = ("args", "requester", "channel", "tool", "now")

_ENV = celpy.Environment()

_NUMBERS = {"int", "uint", "double"}
_COMPREHENSIONS = {"all", "exists", "exists_one", "map", "filter"}
_STRING_METHODS = {"startsWith": "bool", "endsWith": "bool", "contains": "bool", "matches": "bool"}
_TIME_METHODS = {
    "getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
    "getHours", "getMinutes", "getSeconds", "getMilliseconds",
}  # fmt: skip
_FUNCTIONS = {
    "size": "int", "int": "int", "uint": "uint", "double": "double", "string": "string",
    "bool": "bool", "timestamp": "timestamp", "duration": "duration", "type": "dyn", "dyn": "dyn",
    "matches": "bool",
}  # fmt: skip


class ConditionError(PolicyError):
    """A condition that cannot be saved: a syntax error, an unknown name or field, a wrong type. The
    message is one line that names it."""


class ConditionFailed(Exception):
    """A condition that could not be evaluated for one call (a missing optional field, a value of a type
    it did not expect): the call fails safe, and the message says why."""


@dataclass(frozen=True)
class _Type:
    """A CEL type as far as the check knows it: `kind` (`int`, `double`, `string`, `bool`, `list`,
    `map`, `timestamp`, `duration`, `null`, `bytes`, `uint`, `dyn`) and, for `args` and what lies
    under it, the JSON schema that describes it."""

    kind: str
    schema: Any = None
    name: str = ""
    """How the value is written in the condition (for the message)."""

    def known(self) -> bool:
        return self.kind != "dyn"


def check_condition(condition: str, input_schema: dict[str, Any] | None) -> str:
    """The condition, stripped, if it is a CEL expression of type bool over the variables and the tool's
    input schema; else raises `ConditionError` with one line that names what is wrong."""
    text = (condition or "").strip()
    if not text:
        raise ConditionError("a rule needs a condition (a CEL expression, e.g. args.amount > 100.0)")
    if len(text) > CONDITION_LIMIT:
        raise ConditionError(f"a condition is at most {CONDITION_LIMIT} characters (this one has {len(text)})")
    tree = _parse(text)
    nodes = sum(1 for _ in tree.iter_subtrees())
    if nodes > NODE_LIMIT:
        raise ConditionError(f"the condition is too complex ({nodes} parts; at most {NODE_LIMIT})")
    result = _Checker(input_schema or {}).type_of(tree)
    if result.known() and result.kind != "bool":
        raise ConditionError(f"the condition must be true or false, but it is {_a(result.kind)}")
    return text


def _parse(text: str) -> lark.Tree[Any]:
    try:
        return _ENV.compile(text)
    except Exception as exc:  # noqa: BLE001 - celpy's parse errors are of several classes
        first = str(exc).strip().splitlines()
        where = ""
        column = getattr(exc, "column", None)
        if isinstance(column, int) and column > 0:
            where = f" at column {column}"
        raise ConditionError(
            f"syntax error in {text[:80]!r}{where}: {first[0][:120] if first else 'cannot parse'}"
        ) from None


@dataclass(frozen=True)
class Condition:
    """A checked condition, ready to evaluate (compiled once)."""

    text: str

    def evaluate(
        self,
        *,
        args: Any,
        schema: dict[str, Any] | None,
        requester: str,
        channel: str,
        tool: str,
        now: datetime.datetime,
    ) -> bool:
        """Whether the condition holds for a call; raises `ConditionFailed` (why, one line) when it cannot be told."""
        activation = {
            "args": _cel_value(args, schema or {}, schema or {}),
            "requester": celtypes.StringType(requester or ""),
            "channel": celtypes.StringType(channel or ""),
            "tool": celtypes.StringType(tool),
            "now": celtypes.TimestampType(now.astimezone(datetime.UTC)),
        }
        try:
            result = _program(self.text).evaluate(activation)
        except Exception as exc:  # noqa: BLE001 - any evaluation error fails safe
            raise ConditionFailed(_failure(exc)) from None
        if isinstance(result, celpy.CELEvalError):
            raise ConditionFailed(_failure(result))
        if not isinstance(result, celtypes.BoolType | bool):
            raise ConditionFailed(f"it gave {type(result).__name__}, not true or false")
        return bool(result)


_PROGRAMS: dict[str, Any] = {}
_COMPILING = threading.Lock()
"""Rules are evaluated in worker threads; the parser is not known to be thread-safe."""


def _program(text: str) -> Any:
    program = _PROGRAMS.get(text)
    if program is None:
        with _COMPILING:
            if len(_PROGRAMS) > 1000:  # conditions change rarely; a bound keeps a long-lived process small
                _PROGRAMS.clear()
            program = _PROGRAMS[text] = _ENV.program(_ENV.compile(text))
    return program


def too_large(args: Any) -> str | None:
    """Why a rule will not read these arguments (too much JSON, too long a list), or None."""
    try:
        size = len(json.dumps(args, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return "the arguments are not JSON"
    if size > ARGS_LIMIT:
        return f"the arguments are {size} characters of JSON; a rule reads at most {ARGS_LIMIT}"
    stack = [args]
    while stack:
        value = stack.pop()
        if isinstance(value, list):
            if len(value) > LIST_LIMIT:
                return f"a list in the arguments has {len(value)} items; a rule reads at most {LIST_LIMIT}"
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return None


def _failure(exc: BaseException) -> str:
    args = getattr(exc, "args", ())
    text = str(args[0]) if args else str(exc)
    return " ".join(text.split())[:200] or type(exc).__name__


def _cel_value(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    """`value` as CEL sees it; a `number` in the schema is always a double (JSON writes 100.0 as 100)."""
    schema = _resolved(schema, root)
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int | float) and _schema_kind(schema, root) == "double":
        return celtypes.DoubleType(float(value))
    if isinstance(value, dict):
        properties = (schema or {}).get("properties") or {}
        extra = (schema or {}).get("additionalProperties")
        return celtypes.MapType(
            {
                celtypes.StringType(k): _cel_value(v, properties.get(k, extra if isinstance(extra, dict) else {}), root)
                for k, v in value.items()
            }
        )
    if isinstance(value, list):
        items = (schema or {}).get("items") if isinstance(schema, dict) else None
        return celtypes.ListType([_cel_value(v, items or {}, root) for v in value])
    return celpy.json_to_cel(value)


def _resolved(schema: Any, root: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a local `$ref` followed and an optional (`anyOf` of one type and null) unwrapped."""
    for _ in range(20):  # a cycle of references ends here
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, dict) else None
            schema = target
            continue
        options = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(options, list):
            real = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
            if len(real) == 1:
                schema = real[0]
                continue
        return schema
    return {}


_JSON_KINDS = {"integer": "int", "number": "double", "string": "string", "boolean": "bool", "array": "list",
               "object": "map", "null": "null"}  # fmt: skip


def _schema_kind(schema: Any, root: dict[str, Any]) -> str:
    schema = _resolved(schema, root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind is None and "properties" in schema:
        kind = "object"
    return _JSON_KINDS.get(kind, "dyn") if isinstance(kind, str) else "dyn"


class _Checker:
    """Infers the type of each part of a parsed condition, refusing what CEL could not evaluate."""

    def __init__(self, schema: dict[str, Any]):
        self.root = schema
        self.bound: list[dict[str, _Type]] = []
        """The variables of the comprehensions around the part being checked, innermost last."""

    def type_of(self, tree: Any) -> _Type:
        if isinstance(tree, lark.Token):
            return _Type("dyn")
        handler = getattr(self, "_" + tree.data, None)
        if handler is not None:
            found: _Type = handler(tree)
            return found
        children = [c for c in tree.children if c is not None]
        if len(children) == 1:
            return self.type_of(children[0])
        return _Type("dyn")

    # --- operators ---------------------------------------------------------------------------
    def _expr(self, tree: Any) -> _Type:
        condition, then, otherwise = (list(tree.children) + [None, None])[:3]
        if then is None:
            return self.type_of(condition)
        self._expect(self.type_of(condition), "bool", "the condition before ?")
        a, b = self.type_of(then), self.type_of(otherwise)
        return a if a == b else _Type("dyn")

    def _conditionalor(self, tree: Any) -> _Type:
        return self._logical(tree, "||")

    def _conditionaland(self, tree: Any) -> _Type:
        return self._logical(tree, "&&")

    def _logical(self, tree: Any, operator: str) -> _Type:
        parts = [c for c in tree.children if c is not None]
        if len(parts) == 1:
            return self.type_of(parts[0])
        for part in parts:
            self._expect(self.type_of(part), "bool", f"each side of {operator}")
        return _Type("bool")

    def _relation(self, tree: Any) -> _Type:
        parts = [c for c in tree.children if c is not None]
        if len(parts) == 1:
            return self.type_of(parts[0])
        left_tree, right = parts
        operator = left_tree.data.removeprefix("relation_")
        left = self.type_of(left_tree.children[0])
        right_type = self.type_of(right)
        symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "in": "in"}[operator]
        if operator == "in":
            if right_type.known() and right_type.kind not in ("list", "map"):
                raise ConditionError(f"{_name(right_type)} is {_a(right_type.kind)}: `in` needs a list or a map")
            return _Type("bool")
        self._comparable(left, right_type, symbol, ordered=operator not in ("eq", "ne"))
        return _Type("bool")

    def _addition(self, tree: Any) -> _Type:
        return self._arithmetic(tree)

    def _multiplication(self, tree: Any) -> _Type:
        return self._arithmetic(tree)

    def _arithmetic(self, tree: Any) -> _Type:
        parts = [c for c in tree.children if c is not None]
        if len(parts) == 1:
            return self.type_of(parts[0])
        left_tree, right = parts
        symbol = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}[left_tree.data.split("_")[-1]]
        left, right_type = self.type_of(left_tree.children[0]), self.type_of(right)
        if not (left.known() and right_type.known()):
            return _Type("dyn")
        if left.kind in _NUMBERS and left.kind == right_type.kind:
            return _Type(left.kind)
        if symbol == "+" and left.kind == right_type.kind and left.kind in ("string", "list", "bytes"):
            return _Type(left.kind)
        if symbol in "+-" and {left.kind, right_type.kind} <= {"timestamp", "duration"}:
            return _Type("duration" if left.kind == right_type.kind == "timestamp" else "timestamp")
        raise ConditionError(self._mismatch(left, right_type, symbol))

    def _unary(self, tree: Any) -> _Type:
        parts = [c for c in tree.children if c is not None]
        if len(parts) == 1:
            return self.type_of(parts[0])
        operator, operand = parts
        value = self.type_of(operand)
        if operator.data == "unary_not":
            self._expect(value, "bool", "the value after !")
            return _Type("bool")
        if value.known() and value.kind not in ("int", "double"):
            raise ConditionError(f"{_name(value)} is {_a(value.kind)}: it cannot be negated")
        return value

    # --- names, fields, calls ---------------------------------------------------------------
    def _ident(self, tree: Any) -> _Type:
        name = str(tree.children[0])
        for scope in reversed(self.bound):
            if name in scope:
                return scope[name]
        if name == "args":
            return _Type(_schema_kind(self.root, self.root) if self.root else "map", self.root, "args")
        if name in ("requester", "channel", "tool"):
            return _Type("string", name=name)
        if name == "now":
            return _Type("timestamp", name="now")
        if name in ("true", "false"):
            return _Type("bool")
        raise ConditionError(f"unknown name {name!r}: a condition can use {', '.join(VARIABLES)}")

    def _member_dot(self, tree: Any) -> _Type:
        owner, field = tree.children
        return self._field(self.type_of(owner), str(field))

    def _member_index(self, tree: Any) -> _Type:
        owner_tree, index_tree = tree.children
        owner = self.type_of(owner_tree)
        key = _string_literal(index_tree)
        if key is not None and owner.kind == "map":
            return self._field(owner, key)
        index = self.type_of(index_tree)
        if owner.kind == "list":
            if index.known() and index.kind not in ("int", "uint"):
                raise ConditionError(f"{_name(owner)} is a list: index it with an int, not {_a(index.kind)}")
            items = _resolved(owner.schema, self.root).get("items") if owner.schema is not None else None
            return self._typed(items, f"{owner.name}[…]")
        if owner.known() and owner.kind not in ("map", "list"):
            raise ConditionError(f"{_name(owner)} is {_a(owner.kind)}: it cannot be indexed")
        return _Type("dyn")

    def _field(self, owner: _Type, field: str) -> _Type:
        name = f"{owner.name}.{field}" if owner.name else field
        if owner.kind == "map" and owner.schema is not None:
            schema = _resolved(owner.schema, self.root)
            properties = schema.get("properties")
            extra = schema.get("additionalProperties")
            if isinstance(properties, dict) and field in properties:
                return self._typed(properties[field], name)
            if isinstance(extra, dict):
                return self._typed(extra, name)
            if isinstance(properties, dict) and extra is not True:
                known = ", ".join(sorted(properties)) or "none"
                raise ConditionError(f"{owner.name or 'the value'} has no field {field!r} (its fields: {known})")
            return _Type("dyn", name=name)
        if owner.known() and owner.kind not in ("map",):
            raise ConditionError(f"{_name(owner)} is {_a(owner.kind)}: it has no field {field!r}")
        return _Type("dyn", name=name)

    def _typed(self, schema: Any, name: str) -> _Type:
        kind = _schema_kind(schema, self.root)
        return _Type(kind, schema if kind in ("map", "list") else None, name)

    def _member_dot_arg(self, tree: Any) -> _Type:
        owner_tree, method, arguments = (list(tree.children) + [None])[:3]
        method = str(method)
        arguments = [] if arguments is None else list(arguments.children)
        owner = self.type_of(owner_tree)
        if method in _COMPREHENSIONS:
            return self._comprehension(owner, method, arguments)
        types = [self.type_of(a) for a in arguments]
        if method in _STRING_METHODS:
            self._expect(owner, "string", f"the value before .{method}()")
            for value in types:
                self._expect(value, "string", f"the argument of .{method}()")
            return _Type(_STRING_METHODS[method])
        if method == "size":
            return _Type("int")
        if method in _TIME_METHODS:
            if owner.known() and owner.kind not in ("timestamp", "duration"):
                raise ConditionError(f"{_name(owner)} is {_a(owner.kind)}: .{method}() needs a timestamp")
            return _Type("int")
        raise ConditionError(f"unknown function .{method}()")

    def _comprehension(self, owner: _Type, method: str, arguments: list[Any]) -> _Type:
        if len(self.bound) >= NESTING_LIMIT:
            raise ConditionError(f"comprehensions ({method} and the like) nest at most {NESTING_LIMIT} deep")
        if owner.known() and owner.kind not in ("list", "map"):
            raise ConditionError(f"{_name(owner)} is {_a(owner.kind)}: .{method}() needs a list or a map")
        if len(arguments) != 2:
            raise ConditionError(f".{method}() takes a variable and an expression, e.g. .{method}(x, x > 0)")
        variable = _ident_name(arguments[0])
        if variable is None:
            raise ConditionError(f"the first argument of .{method}() must be a name")
        element = _Type("dyn", name=variable)
        if owner.kind == "list" and owner.schema is not None:
            element = self._typed(_resolved(owner.schema, self.root).get("items"), variable)
        elif owner.kind == "map":
            element = _Type("string", name=variable)
        self.bound.append({variable: element})
        try:
            body = self.type_of(arguments[1])
        finally:
            self.bound.pop()
        if method in ("all", "exists", "exists_one", "filter"):
            self._expect(body, "bool", f"the expression in .{method}()")
        return _Type("list") if method in ("map", "filter") else _Type("bool")

    def _ident_arg(self, tree: Any) -> _Type:
        name, arguments = (list(tree.children) + [None])[:2]
        name = str(name)
        arguments = [] if arguments is None else list(arguments.children)
        if name == "has":
            if len(arguments) != 1:
                raise ConditionError("has() takes one field, e.g. has(args.note)")
            self.type_of(arguments[0])  # an unknown field is refused here too
            return _Type("bool")
        if name not in _FUNCTIONS:
            raise ConditionError(f"unknown function {name}()")
        for argument in arguments:
            self.type_of(argument)
        return _Type(_FUNCTIONS[name])

    def _literal(self, tree: Any) -> _Type:
        token = tree.children[0]
        kind = {
            "INT_LIT": "int", "UINT_LIT": "uint", "FLOAT_LIT": "double", "STRING_LIT": "string",
            "MLSTRING_LIT": "string", "BYTES_LIT": "bytes", "BOOL_LIT": "bool", "NULL_LIT": "null",
        }.get(token.type, "dyn")  # fmt: skip
        return _Type(kind, name=str(token))

    def _list_lit(self, tree: Any) -> _Type:
        for child in tree.children:
            if child is not None:
                self.type_of(child)
        return _Type("list")

    def _map_lit(self, tree: Any) -> _Type:
        for child in tree.children:
            if child is not None:
                self.type_of(child)
        return _Type("map")

    def _exprlist(self, tree: Any) -> _Type:
        for child in tree.children:
            self.type_of(child)
        return _Type("dyn")

    def _mapinits(self, tree: Any) -> _Type:
        return self._exprlist(tree)

    def _member_object(self, tree: Any) -> _Type:
        raise ConditionError("message literals (Name{...}) are not available in a condition")

    def _dot_ident(self, tree: Any) -> _Type:
        raise ConditionError(f"unknown name .{tree.children[0]}")

    def _dot_ident_arg(self, tree: Any) -> _Type:
        raise ConditionError(f"unknown function .{tree.children[0]}()")

    # --- helpers -----------------------------------------------------------------------------
    def _expect(self, value: _Type, kind: str, what: str) -> None:
        if value.known() and value.kind != kind:
            raise ConditionError(f"{what} must be {_a(kind)}, but {_name(value)} is {_a(value.kind)}")

    def _comparable(self, left: _Type, right: _Type, symbol: str, *, ordered: bool) -> None:
        if not (left.known() and right.known()):
            return
        if "null" in (left.kind, right.kind) and not ordered:
            return
        if left.kind == right.kind and (
            not ordered or left.kind in (*_NUMBERS, "string", "timestamp", "duration", "bytes")
        ):
            return
        raise ConditionError(self._mismatch(left, right, symbol))

    def _mismatch(self, left: _Type, right: _Type, symbol: str) -> str:
        line = (
            f"{_name(left)} is {_a(left.kind)} and {_name(right)} {_a(right.kind)}: CEL cannot apply {symbol} to them"
        )
        if {left.kind, right.kind} == {"int", "double"}:
            whole = right if right.kind == "int" else left
            hint = f"{whole.name}.0" if whole.name.lstrip("-").isdigit() else f"double({whole.name or '…'})"
            line += f" (write {hint})"
        return line


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _name(value: _Type) -> str:
    return value.name or "the value"


def _ident_name(tree: Any) -> str | None:
    """The name a parse tree is, if it is only a name (a comprehension's variable)."""
    while isinstance(tree, lark.Tree):
        if tree.data == "ident":
            return str(tree.children[0])
        children = [c for c in tree.children if c is not None]
        if len(children) != 1:
            return None
        tree = children[0]
    return None


def _string_literal(tree: Any) -> str | None:
    """The text of a parse tree that is only a string literal (`args["名前"]`), else None."""
    while isinstance(tree, lark.Tree):
        children = [c for c in tree.children if c is not None]
        if len(children) != 1:
            return None
        tree = children[0]
    if isinstance(tree, lark.Token) and tree.type == "STRING_LIT":
        text = str(tree)
        if len(text) >= 2 and text[0] in "\"'" and text[-1] == text[0] and "\\" not in text:
            return text[1:-1]
    return None


@dataclass(frozen=True, kw_only=True)
class RuleOutcome:
    """What a policy's rules say about one proposed call."""

    stored: dict[str, Any] | None = None
    """What the call keeps of the rule that decided it (`ToolRule.fields()` and its `position`, or the
    failed condition with `failed`: why); None when no rule decided."""
    effect: str | None = None
    """The deciding rule's effect (`allow`, `require_approval`, `refuse`); `require_approval` for a
    condition that failed (fail safe); None: no rule decided."""
    trial: dict[str, Any] | None = None
    """The first trial rule that would have decided the call had it been on (`fields()`, `position`)."""


def rule_outcome(rules: Any, *, args: Any, schema: dict[str, Any] | None, requester: str, channel: str,
                 tool: str, now: datetime.datetime) -> RuleOutcome:  # fmt: skip
    """Evaluate `rules` (a policy's `ToolRule`s, in order) for a call: the first rule on whose condition
    holds decides; a condition that cannot be evaluated decides too, as "require approval" (fail safe).
    Trial rules decide nothing; the first that would have decided is reported."""
    trial: dict[str, Any] | None = None
    refused_args = too_large(args)
    for position, rule in enumerate(rules, 1):
        fields = {**rule.fields(), "position": position}
        try:
            if refused_args:
                raise ConditionFailed(refused_args)
            holds = Condition(rule.condition).evaluate(
                args=args, schema=schema, requester=requester, channel=channel, tool=tool, now=now
            )
        except ConditionFailed as exc:
            if rule.trial:
                continue  # a trial rule that cannot be told would have asked; it changes nothing now
            failed = {"position": position, "condition": rule.condition, "failed": str(exc)}
            if rule.name:
                failed["name"] = rule.name
            return RuleOutcome(stored=failed, effect="require_approval", trial=trial)
        if not holds:
            continue
        if rule.trial:
            trial = trial or fields
            continue
        return RuleOutcome(stored=fields, effect=str(rule.effect), trial=trial)
    return RuleOutcome(trial=trial)


def timed_out() -> RuleOutcome:
    """The outcome of rules that took longer than `EVALUATION_TIMEOUT`: the call needs approval."""
    why = f"they took longer than {EVALUATION_TIMEOUT:g} s"
    return RuleOutcome(stored={"position": 0, "condition": "", "failed": why}, effect="require_approval")


def rule_line(stored: Any) -> str | None:
    """The rule a call keeps (see `RuleOutcome.stored`) in one line, as the audit and the approval show it."""
    if not isinstance(stored, dict):
        return None
    position = stored.get("position")
    if stored.get("failed") and not position:
        return f"the rules could not be evaluated ({stored['failed']}), so the call needs approval"
    if stored.get("failed"):
        name = f" ({stored['name']})" if stored.get("name") else ""
        return (
            f"rule {position}{name} could not be evaluated ({stored['failed']}), so the call needs approval: "
            f"{stored.get('condition')}"
        )[:500]
    try:
        return f"rule {position}: " + ToolRule(**_rule_fields(stored)).describe()
    except (TypeError, ValueError):
        return f"rule {position}"


def refused_error(tool_name: str, stored: Any) -> str:
    """The result of a call an admin's rule refused: a fact the model may pass on."""
    name = stored.get("name") if isinstance(stored, dict) else None
    which = f"an admin's rule ({name})" if name else "an admin's rule"
    return f"The call to {tool_name!r} was refused by {which}, so it was not run."


def _rule_fields(stored: dict[str, Any]) -> dict[str, Any]:
    return {
        "condition": stored.get("condition", ""),
        "effect": RuleEffect(str(stored.get("effect"))),
        "name": stored.get("name", ""),
        "approvers": tuple(stored.get("approvers") or ()),
        "trial": bool(stored.get("trial")),
    }


def joined(*parts: str | None) -> str | None:
    """The parts that are there, one after another ("; "), or None."""
    found = [p for p in parts if p]
    return "; ".join(found) if found else None


def rule_approvers(stored: Any) -> tuple[str, ...]:
    """The approvers a call's rule names (they decide it instead of the policy's); () for none."""
    if not isinstance(stored, dict) or stored.get("failed") or stored.get("effect") != RuleEffect.REQUIRE_APPROVAL:
        return ()
    return tuple(a for a in stored.get("approvers") or () if isinstance(a, str))
