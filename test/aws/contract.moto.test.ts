import { startMoto } from '../support/aws/moto.js';
import { startSerializingProxy } from '../support/aws/serializing-proxy.js';
import { defineContractSuite } from './contract-suite.js';

// moto's server (installed into .venv-moto/ on first run) serves DynamoDB, SQS and KMS on one endpoint.
// Emulator gap: moto_server handles requests on concurrent threads and does not make a conditional write
// atomic (check, then store, no lock), so two racing conditional writes to one item can both succeed,
// which DynamoDB never allows. DynamoDB traffic therefore goes through a proxy that hands moto one
// request at a time: the clients still race exactly as in production, and every assertion stays the
// AWS one. SQS traffic goes to moto directly (no test races two requests on one queue message).
defineContractSuite(
  'moto',
  async () => {
    const moto = await startMoto();
    const proxy = await startSerializingProxy(moto.endpoint);
    return {
      dynamodbEndpoint: proxy.endpoint,
      sqsEndpoint: moto.endpoint,
      kmsEndpoint: moto.endpoint,
      stop: async () => {
        await proxy.close();
        await moto.stop();
      },
    };
  },
  { kms: true },
);
