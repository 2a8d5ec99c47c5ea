import { DEFAULT_ROUTER } from '../domain/placement.js';

/**
 * One example body per request the API takes, as a client would send it (the seed's checkout service,
 * its agent and microservice). The OpenAPI document shows them, and a unit test feeds each through the
 * route's own validator, so an example that stops validating fails the build.
 */
export const examples = {
  service: {
    name: 'checkout',
    type: 'microservice',
    resource: 'orders/checkout',
    targetPort: 8080,
    defaultBridge: DEFAULT_ROUTER,
    tags: ['checkout'],
  },
  servicePatch: { tags: ['checkout', 'shop'], targetPort: 8081 },
  serviceYaml: `apiVersion: iofog.org/v3
kind: Service
metadata:
  name: checkout
  tags:
    - checkout
spec:
  type: microservice
  resource: orders/checkout
  targetPort: 8080
  defaultBridge: ${DEFAULT_ROUTER}
`,
  agent: { name: 'fog-a', host: '10.0.0.5', tags: ['service.iofog.org/tag: checkout'] },
  agentPatch: { tags: ['service.iofog.org/tag: checkout', 'service.iofog.org/tag: shop'] },
  application: { name: 'orders' },
  microservice: { name: 'checkout', application: 'orders', agentName: 'fog-a', hostNetworkMode: false },
  microservicePatch: { agentName: 'fog-b' },
  defaultRouter: {
    host: 'router.example.com',
    messagingPort: 5671,
    interRouterPort: 55671,
    edgeRouterPort: 45671,
  },
  provision: { type: 1, key: 'Y2hhbmdlLW1lLXRvLWEta2V5' },
  acknowledgement: { lastUpdated: 7 },
} as const;
