"""%unload_ext in a kernel: every hook and the comm target go (its own kernel, after the others)."""

from __future__ import annotations

from ipython_helpers import clear_shell
from test_ipython_kernel import Kernel, wire


def test_unload_in_the_kernel_restores_its_hooks_and_the_comm_target() -> None:
    clear_shell()
    k = Kernel()
    try:
        k.run("1")
        shell = k.shell
        before = (set(vars(shell.displayhook)), set(vars(shell.display_pub)),
                  {n: list(c) for n, c in shell.events.callbacks.items()},
                  set(k.manager.kernel.comm_manager.targets))
        k.run("%load_ext jupyter_scratchpad")
        k.run("print('x' * 90000)\nlist(range(30000))")
        k.run("%unload_ext jupyter_scratchpad")
        after = (set(vars(shell.displayhook)), set(vars(shell.display_pub)),
                 {n: list(c) for n, c in shell.events.callbacks.items()},
                 set(k.manager.kernel.comm_manager.targets))
        assert after == before
        messages = k.run("'word ' * 20000 + 'THE END'")
        assert "THE END" in wire(messages)
        assert "write" not in vars(k.manager.kernel.stdout) or "jupyter_scratchpad" not in repr(
            vars(k.manager.kernel.stdout)["write"])
    finally:
        k.close()
        clear_shell()
