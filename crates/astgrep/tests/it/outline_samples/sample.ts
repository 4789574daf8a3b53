import { x } from "./x";

/** Options of a parser. */
export interface Options {
  strict: boolean;
  parse(input: string): number;
}

export type Id = string | number;

export enum Color { Red, Green }

export function parse(input: string): number;
export function parse(input: number): number;
export function parse(input: string | number): number {
  return Number(input);
}

export const handler = async (req: Request): Promise<void> => {
  const local = 1;
};

const LIMIT = 10, OTHER = 20;

@sealed
export class Parser<T> extends Base {
  private count = 0;
  static readonly NAME = "p";

  constructor(private readonly options: Options) {
    super();
  }

  /** Parses. */
  @logged
  parse(input: string): T {
    return JSON.parse(input);
  }

  get size(): number {
    return this.count;
  }
}

export namespace Geometry {
  export function area(r: number): number {
    return r * r;
  }
  export namespace Inner {
    export const unit = 1;
  }
}

declare module "left-pad" {
  export function pad(s: string): string;
}
