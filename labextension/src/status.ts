/**
 * The status bar item: the kernel's budget, used / usable tokens.
 */

import { Widget } from '@lumino/widgets';

import { formatBudget, formatCount } from './format';
import { ISnapshot, ScratchpadModel } from './model';

export const STATUS_CLASS = 'jp-scratchpad-status';

/** The item's text and tooltip for a snapshot; empty text when there is nothing to show. */
export function budgetStatusText(snapshot: ISnapshot): { text: string; title: string } {
  const b = snapshot.budget;
  if (snapshot.state !== 'ready' || !b) {
    return { text: '', title: '' };
  }
  return {
    text: `Scratchpad: ${formatBudget(b.used, b.usable)}`,
    title:
      `Context budget of ${b.model}: ${formatCount(b.used)} used of ${formatCount(b.usable)} usable ` +
      `(window ${formatCount(b.context_window)}, margin ${Math.round(b.safety_margin * 100)}%); ` +
      `${formatCount(b.spills)} spills, ${formatCount(b.tokens_intercepted)} tokens kept out of the context`
  };
}

export class BudgetStatus extends Widget {
  constructor(private readonly model: ScratchpadModel) {
    super();
    this.addClass(STATUS_CLASS);
    this.addClass('jp-StatusBar-TextItem');
    model.changed.connect(this._render, this);
    this._render(model, model.snapshot);
  }

  dispose(): void {
    this.model.changed.disconnect(this._render, this);
    super.dispose();
  }

  private _render(_: ScratchpadModel, snapshot: ISnapshot): void {
    const { text, title } = budgetStatusText(snapshot);
    this.node.textContent = text;
    this.node.title = title;
  }
}
