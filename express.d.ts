/// <reference types="node" />
// Types for corepool/express: an Express app.engine() callback rendering Mustache on the pool.

import type { Pool } from './index';

export interface ExpressEngineOptions {
  /** The Pool to render on (default Pool.shared()). */
  pool?: Pool;
  /** The folder partials come from (default: the app's views folder). */
  partials?: string;
  /** Of partial files (default: the rendered file's). */
  extension?: string;
  /** 'string' (default) or 'buffer' (set the Content-Type first, e.g. res.type('html')). */
  output?: 'string' | 'buffer';
  /** false: read every file at every render (default true: cached until a file changes). */
  cache?: boolean;
}

export interface ExpressEngine {
  (file: string, locals: object, callback: (err: unknown, rendered?: string | Buffer) => void): void;
  /** Stops the folder watchers; renders after it read every file at every render. */
  close(): void;
}

export declare function mustacheEngine(options?: ExpressEngineOptions): ExpressEngine;
