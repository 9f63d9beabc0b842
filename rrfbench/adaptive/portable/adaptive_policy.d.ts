// Type declarations for adaptive_policy.js (the query-time fusion policy, JavaScript twin of
// adaptive_policy.py). CommonJS module: `import ap = require("./adaptive_policy")`, or with
// esModuleInterop `import * as ap from "./adaptive_policy"`.

/** One result: [docId, score]. Doc ids are compared as strings. */
export type Result = [string | number, number];

/** Run name -> that run's results for the query, best first. */
export type ResultLists = Record<string, ReadonlyArray<Result>> | Map<string, ReadonlyArray<Result>>;

/** A fusion configuration (Config.to_json() plus a "label"). */
export interface Candidate {
  label?: string;
  method?: string;
  k?: number;
  weights?: number[] | Record<string, number>;
  norm?: string;
  missing?: string;
  [key: string]: unknown;
}

export interface Tree {
  /** Feature index per node (unused at leaves). */
  feature: number[];
  /** Threshold per node: go left when float32(z[feature]) <= threshold. */
  threshold: number[];
  /** Left child per node, -1 at leaves. */
  left: number[];
  /** Right child per node, -1 at leaves. */
  right: number[];
  /** Prediction per node (read at leaves). */
  value: number[];
}

export interface Ensemble {
  init: number;
  rate: number;
  trees: Tree[];
}

export interface ConstantModel {
  type: "constant";
}

export interface LinearModel {
  type: "linear";
  /** "gains": one row per candidate after the first; "logits": one row per candidate;
   * "weights": one row per weight (the predicted weight vector, snapped to the nearest of
   * `points`, one per candidate). */
  target: "gains" | "logits" | "weights";
  mean: number[];
  scale: number[];
  points?: number[][];
  coef: number[][];
  intercept: number[];
  [key: string]: unknown;
}

export interface TreesModel {
  type: "trees";
  /** One boosted ensemble per output (candidates after the first for "gains", weights for
   * "weights"). */
  target: "gains" | "logits" | "weights";
  mean: number[];
  scale: number[];
  points?: number[][];
  ensembles: Ensemble[];
}

export type Model = ConstantModel | LinearModel | TreesModel;

/** The "policy" object of an adaptive best.json. */
export interface Policy {
  runs: string[];
  depth: number;
  rbo_p: number;
  features: string[];
  model: Model;
  tau: number;
  candidates: Candidate[];
  [key: string]: unknown;
}

/** The embedded policy (null until the exporter fills it in). */
export const POLICY: Policy | null;
export const EPS: number;

/** Lower-cased word tokens (Unicode letters, digits, underscore). */
export function tokens(text: unknown): string[];

/** The feature vector of one query, in policy.features order. */
export function features(queryText: string, lists: ResultLists, policy?: Policy | null): number[];

/** Per candidate, how much better than candidate 0 the model expects it to be (0 for
 * candidate 0 itself). */
export function utilities(x: ReadonlyArray<number>, policy?: Policy | null): number[];

/** Index of the candidate configuration for this query: the highest utility when it exceeds
 * tau, else 0 (the static default). */
export function choose(queryText: string, lists: ResultLists, policy?: Policy | null): number;

/** The fusion configuration for this query. */
export function weights(queryText: string, lists: ResultLists, policy?: Policy | null): Candidate;
