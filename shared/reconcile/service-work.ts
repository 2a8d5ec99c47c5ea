import type { Applied } from '../store/applied.js';
import type { DefaultRouterRow } from '../store/routers.js';
import type { ServiceRow } from '../store/services.js';

/** What a service reconcile works from once it has read its inputs (the steps of service.ts share it). */
export interface Work {
  row: ServiceRow;
  defaultRouter: DefaultRouterRow | undefined;
  hubKey: string | undefined;
  /** Tokens indexed and routers asked for this name, by this or any earlier reconcile. */
  applied: Applied;
  /** The connector router the row was last applied to (a moved connector leaves it). */
  previousConnectorRouter: string | null;
}
