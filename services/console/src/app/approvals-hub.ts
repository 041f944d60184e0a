// The live pending lists. Each workspace with open approval pages has one event subscription (however many pages
// are open), and every change it reports is applied to each page on its own: the approval is read fresh with that
// page's token, merged into that page's list and the list re-rendered for that operator (their forms, their CSRF
// token), then sent. A page's updates run one after another, so a page never shows an older state after a newer one.
import type { Scope } from '@toolplane/contracts';
import type { PendingItem } from '../core/approvals-page.js';
import { mergePending } from '../core/pending-list.js';
import { defaultFreshReadTiming, listPending, previewOf, showFresh, withPreviews, type FreshReadTiming } from './approvals.js';
import type { ServiceCaller } from './service-caller.js';
import type { Operator } from './sessions.js';

/** One open page's stream. */
export interface LivePage {
  readonly operator: Operator;
  /** Sends the inner HTML of the page's pending section. */
  send(fragment: string): void;
  /** Ends the stream (the console shuts down, or the workspace's subscription failed: the browser reconnects). */
  end(): void;
}

/** A workspace's approval changes, followed until closed. */
export interface ApprovalChanges {
  close(): Promise<void>;
}

/** What a subscription tells: an approval changed, it hit a problem, or it ended without being closed. */
export interface ChangeHandlers {
  readonly onChange: (approvalId: string) => void;
  readonly onProblem: (error: unknown) => void;
  readonly onEnd: () => void;
}

/** Follows a workspace's approval events; resolves once following, so no change after it resolves is missed. */
export type WatchApprovals = (scope: Scope, handlers: ChangeHandlers) => Promise<ApprovalChanges>;

/** How the hub is set up. */
export interface ApprovalsHubOptions {
  readonly call: ServiceCaller;
  readonly watch: WatchApprovals;
  /** The section's inner HTML for one operator. */
  readonly render: (items: readonly PendingItem[], operator: Operator) => string;
  /** Open pages at most (across workspaces); past it `open` refuses. */
  readonly maxPages: number;
  readonly timing?: FreshReadTiming;
  readonly onProblem: (error: unknown, what: string, scope: Scope) => void;
}

interface PageState {
  readonly page: LivePage;
  readonly controller: AbortController;
  items: readonly PendingItem[];
  chain: Promise<void>;
}

interface Channel {
  readonly scope: Scope;
  readonly pages: Set<PageState>;
  readonly changes: Promise<ApprovalChanges>;
}

/** An open page's registration; `close` when its connection ends. */
export interface LivePageHandle {
  close(): Promise<void>;
}

const keyOf = (scope: Scope) => `${scope.tenant}/${scope.workspace}`;

/** The live approval pages of this replica. */
export class ApprovalsHub {
  readonly #options: ApprovalsHubOptions;
  readonly #channels = new Map<string, Channel>();
  #open = 0;
  #closed = false;

  constructor(options: ApprovalsHubOptions) {
    this.#options = options;
  }

  /** How many pages are open. */
  get size(): number {
    return this.#open;
  }

  /** Whether another page may open. */
  hasRoom(): boolean {
    return !this.#closed && this.#open < this.#options.maxPages;
  }

  /**
   * Registers a page and sends its first list (read after the workspace's subscription is following, so nothing
   * between them is missed). Undefined when the hub is full or closed; throws when the subscription cannot start.
   */
  async open(page: LivePage): Promise<LivePageHandle | undefined> {
    if (!this.hasRoom()) return undefined;
    this.#open += 1;
    const scope = page.operator.scope;
    const channel = this.#channelOf(scope);
    const state: PageState = { page, controller: new AbortController(), items: [], chain: Promise.resolve() };
    channel.pages.add(state);
    let closed = false;
    const handle: LivePageHandle = {
      close: async () => {
        if (closed) return;
        closed = true;
        this.#open -= 1;
        state.controller.abort();
        channel.pages.delete(state);
        if (channel.pages.size === 0 && this.#channels.get(keyOf(scope)) === channel) {
          this.#channels.delete(keyOf(scope));
          await channel.changes.then((changes) => changes.close()).catch(() => undefined);
        }
      },
    };
    // The first list heads the page's chain: changes that come while it is read are applied after it, each from a
    // fresh read, so the list the page ends with is as new as the newest change.
    const first = (async () => {
      await channel.changes;
      const approvals = await listPending(this.#options.call, page.operator, state.controller.signal);
      state.items = await withPreviews(this.#options.call, page.operator, approvals, state.controller.signal);
      if (!state.controller.signal.aborted) page.send(this.#options.render(state.items, page.operator));
    })();
    state.chain = first.catch(() => undefined);
    try {
      await first;
    } catch (error) {
      await handle.close();
      throw error;
    }
    return handle;
  }

  /** Ends every page and subscription (shutdown); no page opens afterwards. */
  async closeAll(): Promise<void> {
    this.#closed = true;
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    for (const channel of channels) for (const state of channel.pages) state.page.end();
    await Promise.all(channels.map((channel) => channel.changes.then((changes) => changes.close()).catch(() => undefined)));
  }

  #channelOf(scope: Scope): Channel {
    const key = keyOf(scope);
    const existing = this.#channels.get(key);
    if (existing !== undefined) return existing;
    const pages = new Set<PageState>();
    const changes = this.#options.watch(scope, {
      onChange: (approvalId) => {
        for (const state of pages) this.#enqueue(scope, state, approvalId);
      },
      onProblem: (error) => this.#options.onProblem(error, 'approval events', scope),
      // An ended subscription would leave its pages silently stale: end them, and their browsers reconnect afresh.
      onEnd: () => {
        if (this.#channels.get(key)?.pages === pages) this.#channels.delete(key);
        for (const state of pages) state.page.end();
      },
    });
    changes.catch(() => {
      if (this.#channels.get(key)?.pages === pages) this.#channels.delete(key);
    });
    const channel: Channel = { scope, pages, changes };
    this.#channels.set(key, channel);
    return channel;
  }

  #enqueue(scope: Scope, state: PageState, approvalId: string): void {
    state.chain = state.chain
      .then(() => this.#apply(state, approvalId))
      .catch((error: unknown) => {
        if (!state.controller.signal.aborted) this.#options.onProblem(error, `refreshing approval ${approvalId}`, scope);
      });
  }

  async #apply(state: PageState, approvalId: string): Promise<void> {
    const { operator } = state.page;
    const { signal } = state.controller;
    if (signal.aborted) return;
    const fresh = await showFresh(this.#options.call, operator, approvalId, signal, this.#options.timing ?? defaultFreshReadTiming);
    const merged = mergePending(
      state.items.map((item) => item.approval),
      fresh,
    );
    const previews = new Map(state.items.map((item) => [item.approval.approvalId, item.preview]));
    state.items = await Promise.all(merged.map(async (approval) => ({ approval, preview: previews.get(approval.approvalId) ?? (await previewOf(this.#options.call, operator, approval.toolCallId, signal)) })));
    if (!signal.aborted) state.page.send(this.#options.render(state.items, operator));
  }
}
