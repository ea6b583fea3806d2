"""A stand-in for the `xlwings` that xlwings Lite runs (its Office.js decorators), for tests.

Records what `@func` and `@arg` declare on each function's `__xlfunc__`, the way xlwings'
xlwings/pro/udfs_officejs.py does (xlfunc/xlarg), and builds the custom-function metadata and
makes calls by that file's rules (custom_functions_meta, custom_functions_call): the Excel name
is the upper-cased Python name, the docstring is the description, an argument's doc is its
`doc=` or "Positional argument N", an argument with a Python default is optional, and an
omitted (None) argument takes that default. Standard library only: the test runs main.py with
this and numpy and nothing else. It copies no xlwings code.
"""

import inspect

__version__ = "lite-stub"


def _info(f):
    if not hasattr(f, "__xlfunc__"):
        params = list(inspect.signature(f).parameters.values())
        args = []
        for pos, p in enumerate(params):
            if p.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
                raise TypeError(f"{f.__name__}: xlwings refuses parameter {p.name} of kind {p.kind}")
            a = {"name": p.name, "pos": pos, "doc": f"Positional argument {pos + 1}", "options": {}}
            if p.default is not inspect.Parameter.empty:
                a["optional"] = p.default
            args.append(a)
        f.__xlfunc__ = {"name": f.__name__, "args": args, "argmap": {a["name"]: a for a in args},
                        "ret": {"doc": f.__doc__ if f.__doc__ is not None else f"Python function '{f.__name__}'",
                                "options": {}}, "func_kwargs": {}, "decorated_by_func": False}
    return f.__xlfunc__


def func(f=None, **kwargs):
    def inner(f):
        info = _info(f)
        info["func_kwargs"] = dict(kwargs)
        info["decorated_by_func"] = True
        return f
    return inner if f is None else inner(f)


def arg(name, convert=None, **kwargs):
    def inner(f):
        info = _info(f)
        if name not in info["argmap"]:
            raise Exception(f"Invalid argument name '{name}'.")
        a = info["argmap"][name]
        if "doc" in kwargs:
            a["doc"] = kwargs.pop("doc")
        if convert is not None:
            kwargs["convert"] = convert
        a["options"].update(kwargs)
        return f
    return inner


def ret(convert=None, **kwargs):
    def inner(f):
        if convert is not None:
            kwargs["convert"] = convert
        _info(f)["ret"]["options"].update(kwargs)
        return f
    return inner


def meta(module):
    """The custom-function metadata Lite would register for `module` (inspect.getmembers)."""
    functions = []
    for _, obj in inspect.getmembers(module):
        if hasattr(obj, "__xlfunc__"):
            info = obj.__xlfunc__
            params = []
            for a in info["args"]:
                p = {"description": a["doc"], "name": a["name"], "dimensionality": "matrix", "type": "any"}
                if "optional" in a:
                    p["optional"] = True
                params.append(p)
            functions.append({"id": info["name"].upper(), "name": info["name"].upper(),
                              "description": info["ret"]["doc"], "parameters": params,
                              "arg_options": {a["name"]: a["options"] for a in info["args"]},
                              "ret_options": info["ret"]["options"], "func_kwargs": info["func_kwargs"],
                              "decorated_by_func": info["decorated_by_func"]})
    return {"functions": functions}


def _to_scalar(value):
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0][0] if isinstance(value[0], (list, tuple)) and len(value[0]) == 1 else value[0]
    return value


def call(module, name, args):
    """Call `name` as Lite does with Office.js values (every argument a matrix or None):
    a 1x1 matrix becomes its value, None takes the Python default. An exception is returned as
    {"error": message}, which Lite shows as #VALUE! with the message."""
    f = getattr(module, name)
    values = []
    for a, value in zip(f.__xlfunc__["args"], args, strict=True):
        value = _to_scalar(value)
        values.append(a.get("optional") if value is None else value)
    try:
        return {"value": f(*values)}
    except Exception as e:
        return {"error": str(e), "type": type(e).__name__}
