import type { AddressInfo } from 'node:net';
import dynalite from 'dynalite';
import { startLocalStack } from '../support/aws/localstack.js';
import { defineContractSuite } from './contract-suite.js';

// LocalStack's SQS (localstack-core from PyPI, installed into .venvs/localstack/ on first run), started
// in host mode without Docker, SQS only. Only the queue part of the contract runs here: DynamoDB is not
// the implementation under test, and dynalite serves the table that the router-reconcile counter needs.
defineContractSuite(
  'LocalStack SQS',
  async () => {
    const localstack = await startLocalStack();
    const dynamo = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
    await new Promise<void>((done) => dynamo.listen(0, '127.0.0.1', () => done()));
    return {
      dynamodbEndpoint: `http://127.0.0.1:${(dynamo.address() as AddressInfo).port}`,
      sqsEndpoint: localstack.endpoint,
      stop: async () => {
        await new Promise<void>((done) => dynamo.close(() => done()));
        await localstack.stop();
      },
    };
  },
  { queuesOnly: true },
);
