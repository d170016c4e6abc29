/**
 * The scratchpad sidebar (left panel): the active notebook's kernel's entries and notes.
 */

import { Widget } from '@lumino/widgets';

import { ISnapshot, ScratchpadModel } from './model';
import { ISidebarActions, renderSidebar } from './sidebarView';

export const SIDEBAR_ID = 'jp-scratchpad-sidebar';

// Time left is recounted locally while visible; the kernel is not asked again for it.
const TICK_MS = 15000;

export class ScratchpadSidebar extends Widget {
  constructor(
    private readonly model: ScratchpadModel,
    private readonly actions: ISidebarActions
  ) {
    super();
    this.id = SIDEBAR_ID;
    this.addClass('jp-scratchpad-sidebar');
    this.title.caption = 'Scratchpad';
    model.changed.connect(this._render, this);
    this._render(model, model.snapshot);
  }

  dispose(): void {
    this._stopTicking();
    this.model.changed.disconnect(this._render, this);
    super.dispose();
  }

  protected onAfterShow(): void {
    this.model.refresh();
    this._tick = setInterval(() => this._render(this.model, this.model.snapshot), TICK_MS);
  }

  protected onAfterHide(): void {
    this._stopTicking();
  }

  private _stopTicking(): void {
    if (this._tick !== null) {
      clearInterval(this._tick);
      this._tick = null;
    }
  }

  private _render(_: ScratchpadModel, snapshot: ISnapshot): void {
    this.node.replaceChildren(renderSidebar(snapshot, this.actions, Date.now()));
  }

  private _tick: ReturnType<typeof setInterval> | null = null;
}
