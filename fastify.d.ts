/// <reference types="node" />
// Types for corepool/fastify: the engine object @fastify/view takes as `engine: { mustache }`.

import type { Pool, MustachePartials, MustacheView } from './index';

export interface FastifyEngineOptions {
  /** The Pool to render on (default Pool.shared()). */
  pool?: Pool;
  /** 'buffer' (default; @fastify/view sets the Content-Type) or 'string'. */
  output?: 'string' | 'buffer';
  /** @fastify/view's root: a view that does not parse is then named by its file, from there. */
  root?: string;
}

export interface FastifyMustacheEngine {
  render(template: string, data: MustacheView, partials?: MustachePartials): Promise<string | Buffer>;
}

export declare function mustacheEngine(options?: FastifyEngineOptions): FastifyMustacheEngine;
