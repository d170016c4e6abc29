/**
 * The notebooks and consoles of the page, by kernel: which one holds the connection that handles
 * a kernel's comms (JupyterLab gives it to the first one opened on that kernel), so that a second
 * notebook on the same kernel talks to the scratchpad and draws its widgets through that one.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import type { INotebookTracker } from '@jupyterlab/notebook';
import type { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import type { Kernel } from '@jupyterlab/services';
import type { Widget } from '@lumino/widgets';

import { commKernelOf } from './model';

/** A console panel, as far as the scratchpad uses one (no dependency on the console package). */
export interface IConsoleLike extends Widget {
  sessionContext: ISessionContext;
  console: { rendermime: IRenderMimeRegistry; inject(code: string): Promise<void> };
}

/** A notebook or a console: its session and its renderers (with its widget manager). */
export interface IKernelHost {
  widget: Widget;
  sessionContext: ISessionContext;
  rendermime: IRenderMimeRegistry;
}

export function isConsole(widget: unknown): widget is IConsoleLike {
  const w = widget as Partial<IConsoleLike> | null;
  return Boolean(w && w.sessionContext && w.console && typeof w.console.inject === 'function');
}

export class KernelHosts {
  /** `widgets()`: the page's widgets where consoles may be (the shell's main and down areas). */
  constructor(
    private readonly notebooks: INotebookTracker,
    private readonly widgets: () => Iterable<Widget> = () => []
  ) {}

  /** Every notebook and console of the page. */
  all(): IKernelHost[] {
    const found: IKernelHost[] = [];
    this.notebooks.forEach(panel =>
      found.push({
        widget: panel,
        sessionContext: panel.sessionContext,
        rendermime: panel.content.rendermime
      })
    );
    for (const widget of this.widgets()) {
      if (isConsole(widget)) {
        found.push({
          widget,
          sessionContext: widget.sessionContext,
          rendermime: widget.console.rendermime
        });
      }
    }
    return found;
  }

  /** The connection of kernel `id` that handles its comms, if a notebook or console has it. */
  commKernel(id: string): Kernel.IKernelConnection | null {
    for (const host of this.all()) {
      const kernel = host.sessionContext.session?.kernel;
      if (kernel && kernel.id === id && kernel.handleComms && !kernel.isDisposed) {
        return kernel;
      }
    }
    return null;
  }

  /** The notebook or console whose connection handles `kernel`'s comms (maybe its own). */
  commHost(kernel: Kernel.IKernelConnection): IKernelHost | null {
    const owner = commKernelOf(kernel);
    return owner
      ? (this.all().find(h => h.sessionContext.session?.kernel === owner) ?? null)
      : null;
  }

  /** The console whose page holds `node` (a card in a console's output), if any. */
  consoleHolding(node: HTMLElement): IConsoleLike | null {
    for (const widget of this.widgets()) {
      if (isConsole(widget) && widget.node.contains(node)) {
        return widget;
      }
    }
    return null;
  }
}
