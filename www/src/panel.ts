// A panel of the app page: something that mounts on the page with the one context every panel
// gets — the store (what the page is about: the settings, the image shown, the tasks Cancel
// stops), the worker client and the image view, and the page's frame (page.ts: notices, the
// status line, the URL's other keys) — and can be disposed of again. main.ts is the list of
// panels. A panel talks to others only through the store (and the page's few shared services),
// never by holding another panel.
import { effect } from '@preact/signals-core';
import type { NanoBraggClient } from './client';
import type { Page } from './page';
import type { Store } from './state';
import type { ImageView } from './view';

export interface PanelContext {
  store: Store;
  client: NanoBraggClient;
  view: ImageView;
  page: Page;
}

export interface Panel {
  readonly name: string;
  mount(ctx: PanelContext): void;
  /** Undo what `mount` did: its effects, listeners and elements. */
  dispose(): void;
}

/** What a panel's mount registers, undone by `dispose`. */
export interface Scope {
  /** A signals effect, disposed of with the panel. */
  effect(fn: () => void | (() => void)): void;
  /** An event listener, removed with the panel. */
  on<K extends keyof WindowEventMap>(target: Window, type: K, fn: (e: WindowEventMap[K]) => void): void;
  on<K extends keyof HTMLElementEventMap>(target: HTMLElement, type: K, fn: (e: HTMLElementEventMap[K]) => void): void;
  on(target: EventTarget, type: string, fn: (e: Event) => void): void;
  /** Anything else to undo. */
  add(undo: () => void): void;
}

/** A panel from its mount function (which registers what it sets up in `scope`; what it
 * returns, if a function, runs on dispose too). */
export function panel(name: string, mount: (ctx: PanelContext, scope: Scope) => void | (() => void)): Panel {
  let undo: (() => void)[] = [];
  const scope: Scope = {
    effect: (fn) => { undo.push(effect(fn)); },
    on: (target: EventTarget, type: string, fn: (e: Event) => void) => {
      target.addEventListener(type, fn);
      undo.push(() => target.removeEventListener(type, fn));
    },
    add: (f) => { undo.push(f); },
  };
  return {
    name,
    mount(ctx) {
      const r = mount(ctx, scope);
      if (typeof r === 'function') undo.push(r);
    },
    dispose() {
      const all = undo.reverse();
      undo = [];
      for (const f of all) f();
    },
  };
}

/** Mount `panels` in order; returns a function that disposes of them in reverse order. */
export function mountPanels(ctx: PanelContext, panels: Panel[]): () => void {
  for (const p of panels) p.mount(ctx);
  return () => { for (const p of [...panels].reverse()) p.dispose(); };
}
