"""Conformance programs from ../shared/seeds/132-closures-sharp-edge.txt and related closure edge cases."""

PROGRAMS = {
    # `x` captured from a module global.
    "seed132_global_read": "x = 5\ndef foo():\n    return x\ndef main():\n    return foo()",
    # `x` captured from the jitted call's own argument.
    "seed132_closure_over_argument": "def foo(x):\n    def bar():\n        return x\n    return bar()\ndef main():\n    return foo(7)",
    # The nonlocal + del program: must raise the same NameError (UnboundLocalError) as native Python.
    "seed132_nonlocal_del": "def foo():\n    a = 5\n    def bar():\n        nonlocal a\n        del a\n    bar()\n    return a\ndef main():\n    return foo()",
    # The `lst` example, former case: the closure and its jitted calls live in `outer`.
    "seed132_lst_inner": "def outer():\n    lst = None\n    def inner():\n        nonlocal lst\n        if lst is None:\n            lst = []\n        lst.append('#')\n        return lst\n    inner()\n    return inner()\ndef main():\n    return outer()",
    # ... latter case: the function with nonlocals is obtained from a global call.
    "seed132_lst_unrelated": "global_lst = []\ndef unrelated():\n    lst = None\n    def inner():\n        nonlocal lst\n        if lst is None:\n            lst = global_lst\n        lst.append('#')\n        return lst\n    return inner\ndef foo():\n    inner_fn = unrelated()\n    lst1 = inner_fn()\n    print(lst1)\n    lst2 = inner_fn()\n    print(lst2)\n    print(lst1 is global_lst)\n    print(lst2 is global_lst)\ndef main():\n    return foo()",
    "seed132_repeat_calls_see_mutation": "def outer():\n    lst = None\n    def inner():\n        nonlocal lst\n        if lst is None:\n            lst = []\n        lst.append('#')\n        return lst\n    return inner\ninner = outer()\ndef main():\n    a = list(inner())\n    b = list(inner())\n    return a, b",
    "seed132_del_then_rebind": "def foo():\n    a = 5\n    def bar():\n        nonlocal a\n        del a\n    def baz():\n        nonlocal a\n        a = 'again'\n    bar()\n    baz()\n    return a\ndef main():\n    return foo()",
    "seed132_del_read_in_inner": "def foo():\n    a = 5\n    def bar():\n        nonlocal a\n        del a\n    def read():\n        return a\n    bar()\n    return read()\ndef main():\n    return foo()",
    "seed132_global_changes_between_calls": "x = 1\ndef foo():\n    return x * 10\ndef main():\n    global x\n    first = foo()\n    x = 2\n    return first, foo()",
    "seed132_closure_changes_between_calls": "def make():\n    v = 1\n    def get():\n        return v\n    def set_(n):\n        nonlocal v\n        v = n\n    return get, set_\nget, set_ = make()\ndef main():\n    a = get()\n    set_(9)\n    return a, get()",
    "seed132_i_increment": "def make():\n    i = 0\n    def fn():\n        nonlocal i\n        i += 1\n        return i\n    return fn\nfn = make()\ndef main():\n    return fn(), fn(), fn()",
}
